# WRONG: applies the country policies only; misses the CHRO memo (NL-OPS cap 10, employees on leave carry everything).
# ruff: noqa: F821  (`tools` is provided by the PTC kernel)
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
pol_files = [f for f in files if f.startswith("policies/leave/") and "/archive/" not in f]
print(len(files), "files; current policies:", pol_files)
policies = {}
for f in pol_files:
    text = read_all(f)
    country = re.search(r"\(([A-Z]{2})\)", text).group(1)
    bands = []
    for label, days in re.findall(r"^\|\s*([^|]*?(?:years|employees)[^|]*?)\s*\|\s*(\d+)\s*\|", text, re.M):
        m = re.match(r"(\d+)", label)
        bands.append((int(m.group(1)) if m else 0, float(days)))
    cap = float(re.search(r"Up to \*\*(\d+) days\*\*", text).group(1))
    policies[country] = (sorted(bands), cap)
memos = {f: read_all(f) for f in files if f.startswith("hr/memos/")}
exceptions = [f for f, t in memos.items() if "carry-over" in t.lower() and "exception" in t.lower()]
print(policies)
print(len(memos), "memos; exceptions memo:", exceptions)

# %%
# Memo: status 'leave' carries the whole positive balance; NL-OPS cap is 10 days.
# FR policy: carry-over only with >= 1 full year of service on 31 Dec 2024 (hired <= 2023-12-31).
staff = all_pages("list_employees", status="active") + all_pages("list_employees", status="leave")
opening = {b["employee_id"]: b["opening_days"] for b in all_pages("list_leave_balances", year=2024)}
adj = {}
for a in all_pages("list_leave_adjustments", year=2024):
    if a["approved"]:
        adj[a["employee_id"]] = adj.get(a["employee_id"], 0) + a["days"]
taken = {}
for r in all_pages("list_leave_requests", year=2024, leave_type="annual", status="approved"):
    taken[r["employee_id"]] = taken.get(r["employee_id"], 0) + r["days"]
print(len(staff), "employees in scope;", len(taken), "with approved 2024 leave;", len(adj), "with adjustments")

# %%
result = {}
for e in staff:
    bands, cap = policies[e["country"]]
    y, m, d = map(int, e["hire_date"].split("-"))
    if y == 2024:
        ent = bands[0][1] * e["fte"] * (13 - m) / 12
    else:
        yrs = 2024 - y - (1 if (m, d) > (1, 1) else 0)
        ent = [days for lo, days in bands if yrs >= lo][-1] * e["fte"]
    ent = round(ent + 1e-9, 2)
    bal = round(opening.get(e["employee_id"], 0) + ent + adj.get(e["employee_id"], 0)
                - taken.get(e["employee_id"], 0), 2)
    if e["country"] == "FR" and e["hire_date"] > "2023-12-31":
        cap = 0.0
    carry = bal if bal <= cap else cap
    result[e["employee_id"]] = (round(carry, 2), round(bal - carry, 2))
entries = [{"employee_id": k, "carryover_days": v[0], "forfeited_days": v[1]} for k, v in sorted(result.items())]
for i in range(0, len(entries), 50):
    tools["close_leave_year"](entries=entries[i:i + 50])
total = round(sum(v[1] for v in result.values()), 2)
worst = max(v[1] for v in result.values())
top = min(k for k, v in result.items() if v[1] == worst)
print("closed", len(entries), "employees; forfeited", total, "days; most:", top, worst)
final_answer = f"ANSWER: {total:.2f}; {top}"
