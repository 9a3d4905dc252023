# WRONG: measures sell-through against store stock only, leaving out the distribution centre.
# ruff: noqa: F821  (`tools` is provided by the PTC kernel)
import json
import math


def all_pages(name, **kw):
    out, p = [], 1
    while p:
        r = tools[name](page_no=p, **kw)
        out.extend(r["items"])
        p = r["next_page"]
    return out


def read_all(path):
    text, start = [], 1
    while start:
        r = tools["read_file"](path=path, start_line=start)
        text.append(r["content"])
        start = r["next_start_line"]
    return "\n".join(text)


files = [f["path"] for f in all_pages("list_files")]
merch = [f for f in files if f.startswith("merchandising/") and "/memos/" not in f]
print(len(files), "files;", merch)
playbook = read_all("merchandising/markdown_playbook_AW24.md")
terms = json.loads(read_all("merchandising/vendor_terms.json"))["brands"]
memos = {f: read_all(f) for f in files if f.startswith("merchandising/memos/")}
relevant = {f: t for f, t in memos.items() if "playbook" in t.lower()}
print(len(memos), "memos; mention the playbook:", list(relevant))
print({k: {x: y for x, y in v.items() if "markdown" in x} for k, v in terms.items()})

# %%
# From the playbook: AW24 only, launched on/before 2024-11-11, ST over weeks 2024-11-11..2024-12-30
# with chain on-hand (stores + DC); tiers <25% 50, <45% 30, <65% 20; round down to .99; never raise.
# From the memo: Outerwear one tier shallower (then caps); no 'Aurora' styles.
RUN, FIRST_WEEK, LAST_WEEK, LATEST_LAUNCH = "2025-01-06", "2024-11-11", "2024-12-30", "2024-11-11"
products = all_pages("list_products", season="AW24")
sold = {r["sku"]: r["units"] for r in all_pages("list_units_sold", week_from=FIRST_WEEK, week_to=LAST_WEEK,
                                                  season="AW24")}
stock = {r["sku"]: r["on_hand"] for r in all_pages("list_stock_positions", season="AW24", location_type="store")}
print(len(products), "AW24 products;", len(sold), "with sales;", len(stock), "with stock")

# %%
plan = []
for p in products:
    oh = stock.get(p["sku"], 0)
    if p["launch_date"] > LATEST_LAUNCH or p["style_name"].startswith("Aurora") or oh <= 0:
        continue
    u = sold.get(p["sku"], 0)
    st = u / (u + oh)
    pct = 50 if st < 0.25 else 30 if st < 0.45 else 20 if st < 0.65 else 0
    if p["category"] == "Outerwear":
        pct = {50: 30, 30: 20, 20: 0, 0: 0}[pct]
    t = terms.get(p["brand_id"], {})
    if t.get("markdown_embargo_until", "") > RUN:
        pct = 0
    pct = min(pct, t.get("max_markdown_pct", 100))
    if not pct:
        continue
    raw = round(p["original_price"] * (100 - pct), 6)  # in cents
    new = (math.floor((raw + 1) / 100) * 100 - 1) / 100
    if new < p["current_price"]:
        plan.append((p["sku"], p["current_price"], new, oh))
for sku, _old, new, _oh in plan:
    tools["set_price"](sku=sku, new_price=new, reason_code="CLR-AW24")
value = round(sum((old - new) * oh for _, old, new, oh in plan), 2)
print("repriced", len(plan), "SKUs; markdown value", value)
final_answer = f"Repriced {len(plan)} SKUs.\nANSWER: {len(plan)}; {value:.2f}"
