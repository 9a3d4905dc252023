low = tools["list_products"](below_reorder=True)["items"]
for p in low:
    tools["flag_reorder"](sku=p["sku"])
tools["notify_buyer"](count=len(low))
final_answer = "ANSWER: done"
print(len(low), "flagged")
