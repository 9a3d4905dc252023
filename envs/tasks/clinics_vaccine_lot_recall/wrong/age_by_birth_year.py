# ruff: noqa: F821, E402
# WRONG: computes age as 2025 minus the birth year, ignoring whether the birthday has passed by
# 2025-06-02 (a patient born 1960-06-03 is still 64).

# %%
def all_pages(name, **kw):
    items, p = [], 1
    while p:
        r = tools[name](page_no=p, **kw)
        items += r["items"]
        p = r["next_page"]
    return items

files = [f["path"] for f in all_pages("list_files")]
notices = [f for f in files if f.startswith("notices/")]
print(len(files), "files,", len(notices), "notices;", [f for f in files if f.startswith("clinical_ops/")])
sop = tools["read_file"](path="clinical_ops/sop_recall_outreach.md")["content"]
print([ln for ln in sop.splitlines() if ln.startswith("## ")])
codes = tools["read_file"](path="clinical_ops/immunocompromising_codes.csv")["content"].splitlines()[1:]
ic_prefixes = tuple(line.split(",")[0] for line in codes if line.strip())
print(len(ic_prefixes), "immunocompromising code prefixes")

# %%
import re

recalls = []
for path in notices:
    text = tools["read_file"](path=path)["content"]
    field = dict(re.findall(r"^\| ([A-Za-z ]+) \| (.*) \|$", text, flags=re.M))
    if field.get("Notice type") != "Patient-level recall" or field.get("Status") != "Active":
        continue
    lots_section = text.split("## Affected lots")[1].split("##")[0]
    lots = [m for m in re.findall(r"^\| ([A-Z0-9]+) \|", lots_section, flags=re.M) if m != "Lot"]
    window = re.findall(r"\*\*(\d{4}-\d{2}-\d{2})\*\*", text.split("## Affected administration window")[1])
    recalls.append({"ref": field["Notice ID"], "cvx": field["CVX"], "lots": set(lots), "from": window[0], "to": window[1]})
for r in recalls:
    print(r["ref"], r["cvx"], sorted(r["lots"]), r["from"], r["to"])

# %%
affected = {}  # (patient_id, ref) -> doses
for r in recalls:
    for lot in sorted(r["lots"]):
        for d in all_pages("list_immunizations", lot_number=lot, administered_from=r["from"], administered_to=r["to"]):
            if d["status"] == "completed":
                affected.setdefault((d["patient_id"], r["ref"]), []).append(d)
print(len(affected), "patient/recall pairs with affected doses")

# %%
def age_on(dob, today=(2025, 6, 2)):
    y, m, d = map(int, dob.split("-"))
    return today[0] - y

by_ref = {r["ref"]: r for r in recalls}
created = urgent = skipped = 0
for (pid, ref), doses in sorted(affected.items()):
    r = by_ref[ref]
    chart = tools["get_patient"](patient_id=pid)
    p = chart["patient"]
    if p["deceased_on"]:
        skipped += 1
        continue
    latest = max(doses, key=lambda d: (d["administered_on"], d["imm_id"]))
    revaccinated = any(i["cvx"] == r["cvx"] and i["lot_number"] not in r["lots"] and i["status"] == "completed"
                       and i["administered_on"] > latest["administered_on"] for i in chart["immunizations"])
    if revaccinated:
        skipped += 1
        continue
    age = age_on(p["dob"])
    ic = any(pr["status"] == "active" and pr["icd10"].startswith(ic_prefixes) for pr in chart["problems"])
    priority = "urgent" if (age < 2 or age >= 65 or ic) else "routine"
    channel = "portal" if p["portal_active"] else ("phone" if (p["phone"] or "").strip() else "letter")
    tools["create_outreach_task"](patient_id=pid, recall_ref=ref, immunization_ids=[d["imm_id"] for d in doses],
                                  priority=priority, channel=channel, site_id=latest["site_id"])
    created += 1
    urgent += priority == "urgent"

print("created", created, "tasks (", urgent, "urgent ), skipped", skipped)
final_answer = f"Opened {created} outreach tasks.\nANSWER: {created}, {urgent}"
