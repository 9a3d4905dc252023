# Wrong: flags products AT their reorder level too (off by one).
rows = tools["list_products"]()["items"]
low = [p for p in rows if p["stock"] <= p["reorder_level"]]
for p in low:
    tools["flag_reorder"](sku=p["sku"])
tools["notify_buyer"](count=len(low))
final_answer = "ANSWER: done"
