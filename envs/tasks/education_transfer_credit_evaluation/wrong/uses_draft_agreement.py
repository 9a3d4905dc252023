# ruff: noqa: F821, E402
# WRONG: also applies the unsigned draft articulation table under transfer/articulation/drafts/.

# %%
def all_pages(name, **kw):
    items, p = [], 1
    while p:
        r = tools[name](page_no=p, **kw)
        items += r["items"]
        p = r["next_page"]
    return items

files = [f["path"] for f in all_pages("list_files")]
print(len(files), "files;", [f for f in files if f.startswith("transfer/") and "/notes/" not in f][:8])

# %%
import csv
import io
import json
from decimal import ROUND_HALF_UP, Decimal

policy = tools["read_file"](path="transfer/transfer_credit_policy_fall2025.md")["content"]
print([ln for ln in policy.splitlines() if ln.startswith("## ")])
subject_map = json.loads(tools["read_file"](path="transfer/elective_subject_map.json")["content"])["map"]
agreements = {}
for f in files:
    if f.startswith("transfer/articulation/") and f.endswith(".csv") :
        text = tools["read_file"](path=f)["content"]
        slug = f.rsplit("/", 1)[1][:-4].replace("_DRAFT", "")
        agreements[slug] = {" ".join(r["external_course"].split()): r["lakeshore_equivalent"].strip()
                            for r in csv.DictReader(io.StringIO(text))}
print(len(subject_map), "subject codes;", len(agreements), "agreements in force")

# %%
batch = all_pages("list_applicants", admit_term="FA2025", admission_status="deposited", evaluation_status="pending")
insts = {i["institution_id"]: i for i in all_pages("list_institutions")}
ids = {a["applicant_id"] for a in batch}
prior = {}
for src in ("AP", "IB", "CLEP", "military", "transfer"):
    for c in all_pages("list_posted_credits", source=src):
        if c["applicant_id"] in ids:
            prior.setdefault(c["applicant_id"], []).append(c)
print(len(batch), "applicants in batch;", len(insts), "institutions;", sum(map(len, prior.values())), "prior credits")

# %%
ACCEPTED = {"A", "A-", "B+", "B", "B-", "C+", "C", "P"}
CAP = Decimal(64)
grand_total = Decimal(0)
n_courses = 0
for a in batch:
    aid = a["applicant_id"]
    total = sum((Decimal(str(c["credits"])) for c in prior.get(aid, [])), Decimal(0))
    have = {c["equivalent"] for c in prior.get(aid, [])}
    courses = sorted(all_pages("list_external_courses", applicant_id=aid), key=lambda c: (c["completed_on"], c["ext_id"]))
    awards = []
    for c in courses:
        inst = insts[c["institution_id"]]
        if inst["accreditation"] == "none" or c["grade"] not in ACCEPTED or c["completed_on"] < "2015-08-01":
            continue
        number = int(c["number"])
        if number < 100:
            continue
        agreement = agreements.get(inst["name"].lower().replace("'", "").replace(" ", "_"), {})
        key = f"{c['subject']} {c['number']}"
        if key in agreement:
            eq = agreement[key]
            if eq == "NO CREDIT":
                continue
        elif inst["accreditation"] == "national":
            continue
        else:
            eq = f"{subject_map.get(c['subject'], 'GEN')} {'1XX' if number < 200 else '2XX'}"
        credits = Decimal(str(c["credits"]))
        if inst["calendar"] == "quarter":
            credits = (credits * 2 / 3).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        if "XX" not in eq and eq in have:
            continue
        if total + credits > CAP:
            continue
        total += credits
        have.add(eq)
        awards.append({"ext_id": c["ext_id"], "equivalent": eq, "credits": float(credits)})
    r = tools["post_transfer_evaluation"](applicant_id=aid, awards=awards)
    grand_total += sum(Decimal(str(x["credits"])) for x in awards)
    n_courses += len(awards)

print("posted", len(batch), "evaluations,", n_courses, "courses")
final_answer = f"Posted {len(batch)} evaluations.\nANSWER: {grand_total:.2f}"
print(final_answer)
