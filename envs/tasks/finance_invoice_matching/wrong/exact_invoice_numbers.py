# WRONG: detects duplicates only on exactly equal vendor invoice numbers (no normalisation of case, spaces, hyphens).
# ruff: noqa: F821  (`tools` is provided by the PTC kernel)
import csv
import io
import json
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
print(len(files), "files;", [f for f in files if f.startswith(("ap/", "treasury/fx"))
                             and "/memos/" not in f and "/notes/" not in f])
policy = read_all("ap/three_way_match_policy.md")
tol = json.loads(read_all("ap/vendor_tolerances.json"))
fx = {r["currency"]: float(r["usd_per_unit"])
      for r in csv.DictReader(io.StringIO(read_all("treasury/fx_rates_payment_run_2024-10-31.csv")))}
memos = {f: read_all(f) for f in files if f.startswith("ap/memos/")}
holds_memo = [t for t in memos.values() if "reason code" in t.lower()]
review_names = [re.search(r"\*\*(.+?)\*\* is under compliance review", t).group(1) for t in holds_memo]
review_code = re.search(r"reason code \*\*([A-Z_]+)\*\*", holds_memo[0]).group(1)
print(len(memos), "memos; compliance hold:", review_names, review_code, "| fx:", fx)
print("tolerance default", tol["default_price_tolerance_pct"],
      {k: v["price_tolerance_pct"] for k, v in tol["overrides"].items()})

# %%
vendors = {v["vendor_id"]: v for v in all_pages("list_vendors")}
review = {k for k, v in vendors.items() if v["name"] in review_names}
invoices = all_pages("list_invoices")
inv_lines = {}
for ln in all_pages("list_invoice_lines"):
    inv_lines.setdefault(ln["invoice_id"], []).append(ln)
po_price = {(ln["po_id"], ln["line_no"]): ln["unit_price"] for ln in all_pages("list_po_lines")}
received = {}
for r in all_pages("list_receipts"):
    received[(r["po_id"], r["line_no"])] = received.get((r["po_id"], r["line_no"]), 0) + r["qty_received"]
queue = sorted((i for i in invoices if i["status"] == "received"), key=lambda i: (i["received_on"], i["invoice_id"]))
print(len(invoices), "invoices,", len(queue), "in queue;", len(po_price), "PO lines;", len(received), "received lines")

# %%


def norm(s):
    return s


numbers, invoiced = set(), {}
for inv in invoices:
    if inv["status"] in ("approved", "paid"):
        numbers.add((inv["vendor_id"], norm(inv["vendor_invoice_no"])))
        for ln in inv_lines.get(inv["invoice_id"], []):
            k = (inv["po_id"], ln["po_line_no"])
            invoiced[k] = invoiced.get(k, 0) + ln["qty"]
approved_usd, held, reasons = 0.0, 0, {}
for inv in queue:
    ls = inv_lines.get(inv["invoice_id"], [])
    key = (inv["vendor_id"], norm(inv["vendor_invoice_no"]))
    pct = tol["overrides"].get(inv["vendor_id"], {}).get("price_tolerance_pct", tol["default_price_tolerance_pct"])
    code = None
    if key in numbers:
        code = "DUPLICATE"
    elif inv["vendor_id"] in review:
        code = review_code
    elif vendors[inv["vendor_id"]]["status"] == "blocked":
        code = "VENDOR_BLOCKED"
    elif abs(inv["total_amount"] - sum(ln["amount"] for ln in ls)) > 0.01 + 1e-9:
        code = "TOTAL_MISMATCH"
    elif any(invoiced.get((inv["po_id"], ln["po_line_no"]), 0) + ln["qty"]
             > received.get((inv["po_id"], ln["po_line_no"]), 0) for ln in ls):
        code = "QTY_EXCEEDS_RECEIPT"
    elif any(abs(ln["unit_price"] - po_price[(inv["po_id"], ln["po_line_no"])]) * 100
             > pct * po_price[(inv["po_id"], ln["po_line_no"])] + 1e-6 for ln in ls):
        code = "PRICE_VARIANCE"
    if code:
        tools["hold_invoice"](invoice_id=inv["invoice_id"], reason_code=code)
        held += 1
        reasons[code] = reasons.get(code, 0) + 1
    else:
        tools["approve_invoice"](invoice_id=inv["invoice_id"])
        numbers.add(key)
        for ln in ls:
            k = (inv["po_id"], ln["po_line_no"])
            invoiced[k] = invoiced.get(k, 0) + ln["qty"]
        approved_usd += inv["total_amount"] * fx[inv["currency"]]
print("approved", len(queue) - held, "held", held, reasons, "USD", round(approved_usd, 2))
final_answer = f"ANSWER: {approved_usd:.2f}; {held}"
