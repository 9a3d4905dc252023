# WRONG: applies the broken promotions to every active member's orders regardless of the minimum tier and channel.
# ruff: noqa: F821  (`tools` is provided by the PTC kernel)
import csv
import io
import re


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
print(len(files), "files;", [f for f in files if f.startswith(("loyalty/", "promotions/"))])

# %%
incident_path, incident = None, ""
for f in files:
    if f.startswith("incidents/"):
        text = read_all(f)
        if "not awarded" in text or "points engine" in text.lower() and "bonus" in text.lower():
            incident_path, incident = f, text
incident_id = re.search(r"INC-\d+", incident_path).group(0)
broken = re.findall(r"\*\*(PR-\d+)\*\*", incident)
start_s, end_s = re.findall(r"\*\*(\d{4}-\d{2}-\d{2}) at (\d{2}:\d{2})\*\*", incident)[:2]
win_start, win_end = f"{start_s[0]} {start_s[1]}", f"{end_s[0]} {end_s[1]}"
terms = read_all("loyalty/program_terms_2024.md")
rates = {t: float(re.search(rf"^\|\s*{t}\s*\|\s*([0-9.]+)", terms, re.M).group(1))
         for t in ("Basic", "Silver", "Gold", "Platinum")}
cal_path = [f for f in files if f.startswith("promotions/") and f.endswith(".csv")][0]
promos = {r["promo_id"]: r for r in csv.DictReader(io.StringIO(read_all(cal_path))) if r["promo_id"] in broken}
print(incident_id, broken, win_start, "->", win_end, rates)
print({k: (v["start_date"], v["end_date"], v["categories"], v["multiplier"], v["min_tier"], v["channels"])
       for k, v in promos.items()})

# %%
TIERS = ["Basic", "Silver", "Gold", "Platinum"]
d1, d2 = win_start[:10], win_end[:10]
orders = {o["order_id"]: o for o in all_pages("list_orders", date_from=d1, date_to=d2, status="completed")
          if o["member_id"] and win_start <= o["ordered_at"] < win_end}
cats = sorted({c for p in promos.values() for c in p["categories"].split("|")})
lines = [ln for c in cats for ln in all_pages("list_order_lines", date_from=d1, date_to=d2, category=c)]
credited = {e["reference"] for e in all_pages("list_ledger", kind="bonus")}
members = {m["member_id"]: m for m in all_pages("list_members")}
print(len(orders), "completed member orders in window;", len(lines), "candidate lines;", len(credited), "bonus refs")

# %%
spend = {}  # (order_id, promo_id) -> cents
for ln in lines:
    o = orders.get(ln["order_id"])
    if not o:
        continue
    m = members[o["member_id"]]
    for pid, pr in promos.items():
        if ln["category"] not in pr["categories"].split("|"):
            continue
        if not (pr["start_date"] <= o["ordered_at"][:10] <= pr["end_date"]):
            continue
        if m["status"] != "active":
            continue
        if f"{o['order_id']}:{pid}" in credited:
            continue
        key = (o["order_id"], pid)
        spend[key] = spend.get(key, 0) + round(ln["qty"] * ln["unit_price"] * 100) - round(ln["discount"] * 100)
owed = {}
for (oid, pid), cents in spend.items():
    mid = orders[oid]["member_id"]
    pts = int((cents // 100) * rates[members[mid]["tier"]] * (int(promos[pid]["multiplier"]) - 1))
    owed[mid] = owed.get(mid, 0) + pts
owed = {m: p for m, p in owed.items() if p > 0}
for mid, pts in sorted(owed.items()):
    tools["post_adjustment"](member_id=mid, points=pts, reference=incident_id,
                             note="Backfill of promotion bonus missed by the points engine")
best = max(owed.values())
top = min(m for m, p in owed.items() if p == best)
print("posted", len(owed), "adjustments, total", sum(owed.values()), "top", top, best)
final_answer = f"ANSWER: {sum(owed.values())}; {top}"
