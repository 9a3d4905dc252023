# ruff: noqa: F821
# Reference PTC program: weekly replenishment run for the Leeds DC (LDS).
# %%
import csv
import io
import json
import math
import re


def all_pages(name, **kwargs):
    out, page_no = [], 1
    while page_no:
        res = tools[name](page_no=page_no, **kwargs)
        out.extend(res["items"])
        page_no = res["next_page"]
    return out


files = [f["path"] for f in all_pages("list_files")]
print(len(files), "files; policies:", [p for p in files if p.startswith("policies/")])
print("memos mentioning credit:", [p for p in files if "credit" in p])

# %%
policy = tools["read_file"](path="policies/replenishment_policy_v3.md")["content"]
print(policy[:300])
safety = json.loads(tools["read_file"](path="config/safety_stock.json")["content"])
weeks = {k: float(v) for k, v in safety["safety_weeks_by_abc_class"].items()}
review = float(safety["review_period_weeks"])
lead = {r["supplier_code"]: int(r["lead_time_weeks"]) for r in
        csv.DictReader(io.StringIO(tools["read_file"](path="data/supplier_lead_times.csv")["content"]))}
RUN = "2024-09-09"
price = {}
for r in csv.DictReader(io.StringIO(tools["read_file"](path="data/price_changes.csv")["content"])):
    if r["effective_from"] <= RUN and (r["sku"] not in price or r["effective_from"] > price[r["sku"]][0]):
        price[r["sku"]] = (r["effective_from"], float(r["new_unit_cost"]))
held = set()
for path in sorted(p for p in files if p.startswith("memos/") and "credit" in p):
    for line in tools["read_file"](path=path)["content"].splitlines():
        for code in re.findall(r"SUP-\d+", line):
            if "LIFTED" in line.upper():
                held.discard(code)
            else:
                held.add(code)
print("safety weeks", weeks, "review", review, "| lead times", len(lead), "| price notices applied", len(price))
print("suppliers on hold:", sorted(held))

# %%
products = {p["sku"]: p for p in all_pages("list_products")}
stock = all_pages("list_stock_levels", warehouse_code="LDS")
on_order = {}
open_pos = all_pages("list_purchase_orders", warehouse_code="LDS", status="sent") + \
    all_pages("list_purchase_orders", warehouse_code="LDS", status="confirmed")
for po in open_pos:
    for line in tools["get_purchase_order"](po_number=po["po_number"])["lines"]:
        on_order[line["sku"]] = on_order.get(line["sku"], 0) + line["qty"]
print(len(products), "products,", len(stock), "LDS stock rows,", len(open_pos), "open LDS POs")

# %%
orders = {}
for st in stock:
    p = products[st["sku"]]
    if p["status"] != "active" or p["supplier_code"] in held:
        continue
    d = st["avg_weekly_demand"]
    ip = st["on_hand"] - st["allocated"] + on_order.get(p["sku"], 0)
    rop = math.ceil(d * (lead[p["supplier_code"]] + review) + d * weeks[p["abc_class"]])
    if ip > rop:
        continue
    qty = rop + 4 * d - ip
    qty = -(-qty // p["pack_size"]) * p["pack_size"]
    cost = price[p["sku"]][1] if p["sku"] in price else p["unit_cost"]
    orders.setdefault(p["supplier_code"], []).append({"sku": p["sku"], "qty": qty, "unit_cost": round(cost, 2)})
total = 0.0
for sup in sorted(orders):
    res = tools["create_purchase_order"](supplier_code=sup, warehouse_code="LDS", lines=orders[sup])
    total += res["total_value"]
print(len(orders), "draft POs,", sum(len(v) for v in orders.values()), "lines, total", round(total, 2))
final_answer = f"Raised {len(orders)} draft POs for LDS.\nANSWER: {total:.2f}"
