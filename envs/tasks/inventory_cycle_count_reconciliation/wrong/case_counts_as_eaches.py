# ruff: noqa: F821
# WRONG: compares case counts (counted_uom = CS) as if they were eaches.
# %%
import json


def all_pages(name, **kwargs):
    out, page_no = [], 1
    while page_no:
        res = tools[name](page_no=page_no, **kwargs)
        out.extend(res["items"])
        page_no = res["next_page"]
    return out


files = [f["path"] for f in all_pages("list_files")]
print(len(files), "files;", [p for p in files if p.startswith(("procedures/", "config/"))])

# %%
sop = tools["read_file"](path="procedures/SOP-INV-07_cycle_count_reconciliation.md")["content"]
tol = json.loads(tools["read_file"](path="config/count_tolerances.json")["content"])
void_memos = []
for path in (p for p in files if p.startswith("memos/")):
    text = tools["read_file"](path=path)["content"]
    if "VOID" in text:
        void_memos.append((path, text))
print("tolerance categories:", len(tol["by_category"]), "default:", tol["default"])
print("memos declaring a void:", [p for p, _ in void_memos])
print(void_memos[0][1][:420])

# %%
sessions = all_pages("list_count_sessions", warehouse="RTM", week=36)
void = {s["session_id"] for s in sessions
        if s["zone"] == "C" and s["shift"] == "night" and s["started_at"].startswith("2024-09-04")}
print("RTM week-36 sessions:", [s["session_id"] for s in sessions], "void:", sorted(void))
lines = []
for s in sessions:
    lines += [dict(ln, session_id=s["session_id"]) for ln in
              all_pages("list_count_lines", session_id=s["session_id"], status="submitted")]
items = {it["sku"]: it for it in all_pages("list_items")}
stock = {(r["bin_code"], r["sku"]): r["qty"] for r in all_pages("list_bin_stock", warehouse="RTM")}
print(len(lines), "submitted lines,", len(items), "items,", len(stock), "RTM stock records")

# %%
decisions = {}
latest = {}
for ln in lines:
    if ln["session_id"] in void:
        decisions[ln["id"]] = {"line_id": ln["id"], "outcome": "recount"}
        continue
    key = (ln["bin_code"], ln["sku"])
    if key not in latest or ln["counted_at"] > latest[key]["counted_at"]:
        latest[key] = ln
for ln in lines:
    if ln["id"] in decisions:
        continue
    key = (ln["bin_code"], ln["sku"])
    if latest[key]["id"] != ln["id"]:
        decisions[ln["id"]] = {"line_id": ln["id"], "outcome": "superseded"}
        continue
    it = items[ln["sku"]]
    counted = ln["counted_qty"]
    var = counted - stock.get(key, 0)
    lim = tol["by_category"].get(it["category"], tol["default"])
    if var == 0:
        decisions[ln["id"]] = {"line_id": ln["id"], "outcome": "matched"}
    elif not it["serial_tracked"] and abs(var) <= lim["max_units"] and abs(var) * it["unit_cost"] <= lim["max_value_eur"]:
        decisions[ln["id"]] = {"line_id": ln["id"], "outcome": "adjust", "delta_qty": var}
    else:
        decisions[ln["id"]] = {"line_id": ln["id"], "outcome": "recount"}
todo = [decisions[k] for k in sorted(decisions)]
net, posted = 0.0, 0
for i in range(0, len(todo), 25):
    res = tools["resolve_count_lines"](decisions=todo[i:i + 25])
    net += res["net_value_eur"]
    posted += res["adjustments_posted"]
counts = {}
for d in todo:
    counts[d["outcome"]] = counts.get(d["outcome"], 0) + 1
print("outcomes:", dict(sorted(counts.items())), "| adjustments posted:", posted, "| net EUR", round(net, 2))
final_answer = f"Reconciled {len(todo)} lines.\nANSWER: {net:.2f}"
