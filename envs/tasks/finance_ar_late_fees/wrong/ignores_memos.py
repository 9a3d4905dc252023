# WRONG: applies the base policy only: 1.5% for enterprise customers and no waivers.
# ruff: noqa: F821  (`tools` is provided by the PTC kernel)
import csv
import io
import re
from datetime import date, timedelta


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
print(len(files), "files;", [f for f in files if f.startswith("ar/")])
policy = read_all("ar/late_fee_policy.md")
terms = {r["terms_code"]: r for r in csv.DictReader(io.StringIO(read_all("ar/payment_terms.csv")))}
memos = {f: read_all(f) for f in files if f.startswith("ar/memos/")}
rate_memo = [t for t in memos.values() if "late fee rate" in t.lower()][0]
waiver_memo = [t for t in memos.values() if "do not charge" in t.lower()][0]
enterprise_rate = float(re.search(r"reduced to \*\*([0-9.]+)%\*\*", rate_memo).group(1))
waived = re.findall(r"^\* (.+)$", waiver_memo, re.M)
print({k: (v["net_days"], v["grace_days"], v["basis"]) for k, v in terms.items()})
print("enterprise rate", enterprise_rate, "waived", waived)

# %%
RUN, PERIOD = date(2024, 10, 31), "2024-10"
customers = {c["customer_id"]: c for c in all_pages("list_customers")}
open_inv = all_pages("list_invoices", status="open")
reduce = {}
for p in all_pages("list_payments"):
    if p["received_on"] <= RUN.isoformat():
        reduce[p["invoice_id"]] = reduce.get(p["invoice_id"], 0) + p["amount"]
for c in all_pages("list_credit_notes"):
    if c["issued_on"] <= RUN.isoformat():
        reduce[c["invoice_id"]] = reduce.get(c["invoice_id"], 0) + c["amount"]
disputed = {d["invoice_id"] for d in all_pages("list_disputes", status="open")}
charged = {f["invoice_id"] for f in all_pages("list_late_fees", period=PERIOD)}
print(len(customers), "customers;", len(open_inv), "open invoices;", len(disputed), "open disputes;",
      len(charged), "already charged")

# %%


def due(issued, term):
    d = date.fromisoformat(issued)
    if term["basis"] == "end_of_month":
        d = date(d.year + (d.month == 12), d.month % 12 + 1, 1) - timedelta(days=1)
    return d + timedelta(days=int(term["net_days"]))


worst, posted = {}, {}
for inv in open_inv:
    c = customers[inv["customer_id"]]
    term = terms[c["terms_code"]]
    bal = round(inv["amount"] - reduce.get(inv["invoice_id"], 0), 2)
    dpd = (RUN - due(inv["issued_on"], term)).days
    if bal < 50 or inv["invoice_id"] in disputed:
        continue
    worst[c["customer_id"]] = max(worst.get(c["customer_id"], 0), dpd)
    if dpd <= int(term["grace_days"]) or c["segment"] in ("government", "nonprofit"):
        continue
    if inv["invoice_id"] in charged:
        continue
    rate = 1.5
    fee = min(750.0, max(25.0, round(bal * rate / 100 + 1e-9, 2)))
    tools["post_late_fee"](invoice_id=inv["invoice_id"], amount=fee)
    posted[inv["invoice_id"]] = fee
changed = 0
for cid, c in customers.items():
    d = worst.get(cid, 0)
    level = 0 if d <= 0 else 1 if d <= 30 else 2 if d <= 60 else 3
    if level != c["dunning_level"]:
        tools["set_dunning_level"](customer_id=cid, level=level)
        changed += 1
    c["new_level"] = level
n3 = sum(1 for c in customers.values() if c["new_level"] == 3)
total = round(sum(posted.values()), 2)
print("fees posted", len(posted), "total", total, "| dunning changes", changed, "level 3:", n3)
final_answer = f"ANSWER: {total:.2f}; {n3}"
