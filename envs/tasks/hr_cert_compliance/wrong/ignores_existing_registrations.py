# WRONG: does not check for existing registrations and books employees who are already registered again.
# ruff: noqa: F821  (`tools` is provided by the PTC kernel)
import json


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
print(len(files), "files;", [f for f in files if f.startswith("compliance/")])
policy = read_all("compliance/certification_policy.md")
roles = json.loads(read_all("compliance/role_requirements.json"))["roles"]
memos = {f: read_all(f) for f in files if f.startswith("memos/")}
relevant = [f for f, t in memos.items() if "certificate" in t.lower()]
print(len(memos), "memos; about certificates:", relevant)
print({k: v["required_certificates"] for k, v in roles.items()})

# %%
# Policy: active only; verified + not expired on 2024-11-15 (inclusive); restrict / clear; renew if the
# latest valid cert expires by 2025-01-14: earliest session in the site's region, after the review date
# and by the expiry, with a free seat; skip if already registered for that code; book by expiry order.
# Memos: FA-CPR satisfies FIRSTAID (renew on FIRSTAID); LOTO expiring 2024-10-01..2024-12-31 is valid
# until 2025-03-31 and is not booked now.
REVIEW, RENEW_BY = "2024-11-15", "2025-01-14"
region = {s["site_id"]: s["region"] for s in all_pages("list_sites")}
staff = all_pages("list_employees", employment_status="active")
certs = {}
for c in all_pages("list_certifications"):
    certs.setdefault(c["employee_id"], []).append(c)
sessions = all_pages("list_training_sessions")
registered = {(e["employee_id"], e["cert_code"]) for e in all_pages("list_enrollments", status="registered")}
print(len(staff), "active employees;", sum(map(len, certs.values())), "certificates;", len(sessions), "sessions")

# %%
new_status, needs = {}, []
for e in staff:
    missing, soon = False, []
    for code in roles[e["role_code"]]["required_certificates"]:
        ok_codes = ("FIRSTAID", "FA-CPR") if code == "FIRSTAID" else (code,)
        best = None
        for c in certs.get(e["employee_id"], []):
            if c["cert_code"] not in ok_codes or not c["verified"]:
                continue
            exp, grace = c["expires_on"], False
            if c["cert_code"] == "LOTO" and "2024-10-01" <= exp <= "2024-12-31":
                exp, grace = "2025-03-31", True
            if exp >= REVIEW and (best is None or exp > best[0]):
                best = (exp, grace)
        if best is None:
            missing = True
        elif best[0] <= RENEW_BY and not best[1]:
            soon.append((best[0], e["employee_id"], code, region[e["site_id"]]))
    new_status[e["employee_id"]] = "restricted" if missing else "cleared"
    if not missing:
        needs += soon
changes = [e for e in staff if e["work_status"] != new_status[e["employee_id"]]]
for e in changes:
    tools["set_work_status"](employee_id=e["employee_id"], work_status=new_status[e["employee_id"]],
                             reason="Q4-2024 compliance review")
print("status changes:", len(changes), "restricted now:", sum(v == "restricted" for v in new_status.values()))

# %%
booked, unplaced = 0, 0
open_sessions = sorted((s for s in sessions if s["start_date"] > REVIEW), key=lambda s: (s["start_date"], s["session_id"]))
for exp, emp, code, reg in sorted(needs):
    for s in open_sessions:
        if s["cert_code"] == code and s["region"] == reg and s["start_date"] <= exp and s["seats_taken"] < s["capacity"]:
            try:
                tools["enroll_employee"](employee_id=emp, session_id=s["session_id"])
            except ToolError:
                continue
            s["seats_taken"] += 1
            booked += 1
            break
    else:
        unplaced += 1
n_restricted = sum(v == "restricted" for v in new_status.values())
print("renewals needed:", len(needs), "booked:", booked, "no session:", unplaced)
final_answer = f"ANSWER: {n_restricted}; {booked}"
