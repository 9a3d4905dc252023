# ruff: noqa: F821
# WRONG: checks the teams of lapsed protocols instead of marking them expired.
# %%
import csv
import io
import json


def all_pages(name, **kwargs):
    out, page_no = [], 1
    while page_no:
        res = tools[name](page_no=page_no, **kwargs)
        out.extend(res["items"])
        page_no = res["next_page"]
    return out


files = [f["path"] for f in all_pages("list_files")]
print(len(files), "files;", [p for p in files if p.startswith("ethics/")])
print("memos:", len([p for p in files if p.startswith("memos/")]))

# %%
print(tools["read_file"](path="ethics/compliance_procedure.md")["content"][:500])
req = json.loads(tools["read_file"](path="ethics/training_requirements.json")["content"])
counts_as = {r["course_code"]: r["counts_as"].strip() for r in
             csv.DictReader(io.StringIO(tools["read_file"](path="ethics/course_equivalences.csv")["content"]))
             if r["counts_as"].strip()}
notices = [tools["read_file"](path=p)["content"] for p in files if p.startswith("memos/")]
withdrawn = [n for n in notices if "WITHDRAWN" in n]
print("pass mark", req["pass_mark"], "| validity", req["validity_years"], "| human rules", req["human"])
print("equivalences", counts_as, "| withdrawal notices:", len(withdrawn))
print(withdrawn[0][:420])

# %%
AS_OF = "2024-07-01"
codes = sorted(set(req["validity_years"]) | set(counts_as))
records = []
for code in codes:
    records += all_pages("list_training_records", course_code=code)
current = {}
for t in records:
    code = counts_as.get(t["course_code"], t["course_code"])
    years = req["validity_years"].get(code)
    if years is None or t["score"] < req["pass_mark"]:
        continue
    if t["provider"] == "NovaLearn" and "2023-03-01" <= t["completed_on"] <= "2023-05-31":
        continue
    if t["completed_on"] >= f"{2024 - years}-07-01":
        current.setdefault(t["researcher_id"], set()).add(code)
protocols = all_pages("list_protocols", protocol_type="human", status="active")
members = {}
for m in all_pages("list_protocol_members", status="active"):
    members.setdefault(m["protocol_id"], []).append(m)
print(len(records), "relevant training records,", len(protocols), "active human protocols,",
      sum(len(v) for v in members.values()), "active memberships (all protocols)")

# %%
rules = req["human"]
n_exp = n_mem = 0
suspended = []
for p in protocols:
    pi_bad = False
    for m in members.get(p["id"], []):
        need = set(rules["all_members"]) | set(rules["by_role"].get(m["role"], [])) | \
            set(rules["by_risk_level"].get(p["risk_level"], []))
        missing = sorted(need - current.get(m["researcher_id"], set()))
        if missing:
            tools["suspend_member"](protocol_id=p["id"], researcher_id=m["researcher_id"], missing_courses=missing)
            n_mem += 1
            pi_bad |= m["role"] == "PI"
    if pi_bad:
        tools["suspend_protocol"](protocol_id=p["id"], reason="PI training not current")
        suspended.append(p["id"])
print("expired", n_exp, "| members suspended", n_mem, "| protocols suspended", len(suspended))
final_answer = "Sweep complete.\nANSWER: " + (", ".join(sorted(suspended)) or "none")
