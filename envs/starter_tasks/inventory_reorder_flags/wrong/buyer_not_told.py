# Wrong: flags the right products but never tells the buyer.
for p in tools["list_products"](below_reorder=True)["items"]:
    tools["flag_reorder"](sku=p["sku"])
final_answer = "ANSWER: done"
