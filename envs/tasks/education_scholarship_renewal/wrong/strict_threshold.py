# ruff: noqa: F821, E402
# WRONG: requires the GPA to be strictly above the program minimum (the sheets say 'at least').

# %%
def all_pages(name, **kw):
    items, p = [], 1
    while p:
        r = tools[name](page_no=p, **kw)
        items += r["items"]
        p = r["next_page"]
    return items

files = [f["path"] for f in all_pages("list_files")]
relevant = [f for f in files if "polic" in f or "/programs/" in f or f.endswith(".csv")]
print(len(files), "files; relevant:", relevant)

# %%
import re
from decimal import ROUND_HALF_UP, Decimal

policy = tools["read_file"](path="financial_aid/policies/scholarship_renewal_policy_2025-26.md")["content"]
print([ln for ln in policy.splitlines() if ln.startswith("#")][:12])

grade_csv = tools["read_file"](path="registrar/grade_points.csv")["content"].splitlines()
points = {}
for line in grade_csv[1:]:
    g, qp, in_gpa, _earns, _desc = line.split(",", 4)
    if in_gpa == "yes":
        points[g] = Decimal(qp)
print("grade points:", points)

rules = {}
for path in [f for f in files if f.startswith("financial_aid/programs/")]:
    text = tools["read_file"](path=path)["content"]
    code = re.search(r"program code (\w+)", text).group(1)

    def num(label, text=text):
        return Decimal(re.search(re.escape(label) + r"\s*\|\s*([\d.]+)", text).group(1))

    rules[code] = {
        "min_gpa": num("Minimum renewal GPA"), "floor": num("Probation GPA floor"),
        "min_credits": int(num("Minimum credits earned")),
        "extra": re.search(r"Additional requirement \| (.*) \|", text).group(1),
        "renew": re.search(r"\*\*Renewal:\*\*(.*)", text).group(1),
        "prob": re.search(r"\*\*Probation:\*\*(.*)", text).group(1),
    }
for code, r in sorted(rules.items()):
    print(code, r["min_gpa"], r["floor"], r["min_credits"], "| extra:", r["extra"][:40], "| renew:", r["renew"][:45],
          "| prob:", r["prob"][:30])

# %%
pending = all_pages("list_awards", academic_year="2024-25", status="pending_review")
prior = all_pages("list_awards", academic_year="2023-24")
prior_probation = {(a["student_id"], a["program_code"]) for a in prior if a["decision"] == "probation"}
status = {s["student_id"]: s["status"] for s in all_pages("list_students")}
integrity = {c["student_id"] for c in all_pages("list_conduct_cases", category="academic_integrity")
             if c["outcome"] == "responsible" and "2024-08-15" <= c["case_date"] <= "2025-06-30"}
print(len(pending), "pending awards;", len(prior_probation), "prior probations;", len(integrity), "integrity findings")

# %%
STEM = {"MATH", "PHYS", "CHEM", "BIOL", "CSCI", "ENGR"}
ARTS = {"ARTS", "MUSC", "THEA"}


def next_amount(rule_text, amount):
    amount = Decimal(str(amount))
    if "not available" in rule_text:
        return None
    if "unchanged" in rule_text:
        return amount
    if "3%" in rule_text:
        return (amount * Decimal("1.03")).quantize(Decimal("1"), rounding=ROUND_HALF_UP)
    if "$500" in rule_text:
        return min(amount + 500, Decimal("6000"))
    if "50%" in rule_text:
        return amount / 2
    return amount


total = Decimal(0)
counts = {"renew": 0, "probation": 0, "terminate": 0}
for a in pending:
    sid, rule = a["student_id"], rules[a["program_code"]]
    rows = [t for t in all_pages("get_transcript", student_id=sid) if t["term"] in ("FA2024", "SP2025", "SU2025")]
    pts = cr = Decimal(0)
    earned = stem = 0
    arts = False
    for t in rows:
        g = t["grade"]
        if (g in points and g != "F") or g == "P":
            earned += t["credits"]
            stem += t["credits"] if t["department"] in STEM else 0
            arts = arts or t["department"] in ARTS
        if g in points and t["term"] != "SU2025":
            pts += points[g] * t["credits"]
            cr += t["credits"]
    gpa = (pts / cr).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) if cr else Decimal(0)
    extra_ok = True
    if "12" in rule["extra"] and "STEM" in rule["extra"]:
        extra_ok = stem >= 12
    elif "ARTS" in rule["extra"]:
        extra_ok = arts
    prob_amount = next_amount(rule["prob"], a["amount"])
    if status[sid] != "active" or sid in integrity:
        decision = "terminate"
    elif gpa > rule["min_gpa"] and earned >= rule["min_credits"] and extra_ok:
        decision = "renew"
    elif prob_amount is not None and gpa >= rule["floor"] and (sid, a["program_code"]) not in prior_probation:
        decision = "probation"
    else:
        decision = "terminate"
    amount = {"renew": next_amount(rule["renew"], a["amount"]), "probation": prob_amount,
              "terminate": Decimal(0)}[decision]
    tools["set_award_decision"](award_id=a["award_id"], decision=decision, next_year_amount=float(amount),
                                note=f"GPA {gpa}, {earned} credits")
    counts[decision] += 1
    total += amount

print("decisions:", counts)
final_answer = f"Reviewed {len(pending)} awards.\nANSWER: {total:.2f}"
print(final_answer)
