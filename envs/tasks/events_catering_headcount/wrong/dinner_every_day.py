# ruff: noqa: F821
# WRONG: orders dinner on every event day, including the final day and one-day events.
# %%
import csv
import io
import json
from datetime import date, timedelta


def all_pages(name, **kwargs):
    out, page_no = [], 1
    while page_no:
        res = tools[name](page_no=page_no, **kwargs)
        out.extend(res["items"])
        page_no = res["next_page"]
    return out


files = [f["path"] for f in all_pages("list_files")]
print(len(files), "files;", [p for p in files if p.startswith(("catering/", "config/"))])

# %%
guide = tools["read_file"](path="catering/catering_guidelines.md")["content"]
crew_cfg = json.loads(tools["read_file"](path="config/event_crew.json")["content"])
rates = list(csv.DictReader(io.StringIO(tools["read_file"](path="catering/caterer_rates.csv")["content"])))
print("default crew", crew_cfg["default_crew"], "| crew entries", len(crew_cfg["crew_by_event"]), "| rate rows", len(rates))
events = all_pages("list_events", date_from="2024-10-14", date_to="2024-10-20")
print(len(events), "events in window; statuses:", sorted({e["status"] for e in events}))

# %%
TYPES = ("standard", "vegetarian", "vegan", "gluten_free", "halal")
total_meals, total_cost, cancelled = 0, 0.0, 0
for ev in events:
    if ev["status"] != "scheduled":
        cancelled += tools["cancel_catering_orders"](event_id=ev["id"])["cancelled"]
        continue
    detail = tools["get_event"](event_id=ev["id"])
    tickets = {t["id"]: t for t in detail["ticket_types"]}
    regs = all_pages("list_registrations", event_id=ev["id"], status="confirmed")
    crew = crew_cfg["crew_by_event"].get(ev["id"], crew_cfg["default_crew"])
    start = date.fromisoformat(ev["start_date"])
    services = []
    for day in range(1, ev["days"] + 1):
        for meal in ["lunch", "dinner"]:
            c = dict.fromkeys(TYPES, 0)
            for r in regs:
                t = tickets[r["ticket_type_id"]]
                if t["includes_" + meal] and t["valid_day"] in (None, day):
                    c[{"none": "standard", "kosher": "vegan"}.get(r["dietary"], r["dietary"])] += 1
            if not sum(c.values()):
                continue
            if meal == "lunch":
                c["standard"] += crew
            c["standard"] += -(-c["standard"] // 20)
            if sum(c.values()) < 20:
                c["standard"] += 20 - sum(c.values())
            when = (start + timedelta(days=day - 1)).isoformat()
            rate = [x for x in rates if x["caterer_code"] == ev["caterer_code"] and x["meal"] == meal
                    and x["valid_from"] <= when <= x["valid_to"]][0]
            total_cost += c["standard"] * float(rate["standard_price_eur"]) + \
                (sum(c.values()) - c["standard"]) * float(rate["special_diet_price_eur"])
            services.append({"day": day, "meal": meal, **c})
    res = tools["set_catering_order"](event_id=ev["id"], services=services)
    total_meals += res["total_meals"]
print("meals", total_meals, "| cost", round(total_cost, 2), "| draft orders cancelled", cancelled)
final_answer = f"Catering finalised.\nANSWER: {total_meals}; {total_cost:.2f}"
