# ruff: noqa: F821
# WRONG: uses the archived 30-minute changeover instead of the settings file's turnaround.
# %%
import csv
import io
import json
import re


def all_pages(name, **kwargs):
    out, page_no = [], 1
    while page_no:
        res = tools[name](page_no=page_no, **kwargs)
        out.extend(res["items"])
        page_no = res["next_page"]
    return out


files = [f["path"] for f in all_pages("list_files")]
print(len(files), "files; rules/config:", [p for p in files if p.startswith(("policies/", "config/", "data/",
                                                                               "finance/"))])
print("memos:", [p for p in files if p.startswith("memos/")])

# %%
rules = tools["read_file"](path="policies/room_allocation_rules.md")["content"]
settings = json.loads(tools["read_file"](path="config/allocation_settings.json")["content"])
pct = {r["layout"]: int(r["capacity_percent_of_theatre"]) for r in
       csv.DictReader(io.StringIO(tools["read_file"](path="data/layout_capacity.csv")["content"]))}
held = {r["client_id"] for r in csv.DictReader(io.StringIO(tools["read_file"](path="finance/credit_holds.csv")["content"]))
        if not r["released_on"].strip()}
closed = {}
for path in (p for p in files if p.startswith("memos/")):
    text = tools["read_file"](path=path)["content"]
    for rid, d0, d1 in re.findall(r"(R-\d{4}) .*closed (\d{4}-\d{2}-\d{2}) to (\d{4}-\d{2}-\d{2})", text):
        closed.setdefault(rid, []).append((d0, d1))
print("settings:", settings["allocation_month"], settings["turnaround_minutes"], settings["tier_priority"],
      settings["blocking_booking_statuses"])
print("layout %:", pct, "| active holds:", len(held), "| rooms with closures:", len(closed))

# %%
tiers = {c["id"]: c["tier"] for c in all_pages("list_clients")}
rooms = all_pages("list_rooms")
reqs = all_pages("list_booking_requests", status="pending", month="2024-10")
bookings = all_pages("list_bookings", date_from="2024-10-01", date_to="2024-10-31")
print(len(tiers), "clients,", len(rooms), "rooms,", len(reqs), "pending October requests,", len(bookings),
      "October bookings")


def mins(hm):
    return int(hm[:2]) * 60 + int(hm[3:])


# %%
buffer = 30
rank = {t: i for i, t in enumerate(settings["tier_priority"])}
busy = {}
for b in bookings:
    if b["status"] in settings["blocking_booking_statuses"]:
        busy.setdefault((b["room_id"], b["event_date"]), []).append((mins(b["start_time"]), mins(b["end_time"])))
reqs.sort(key=lambda q: (rank[tiers[q["client_id"]]], q["submitted_at"], q["id"]))
n_alloc = n_decl = 0
for q in reqs:
    if q["client_id"] in held:
        tools["decline_request"](request_id=q["id"], reason_code="CREDIT_HOLD")
        n_decl += 1
        continue
    s, e = mins(q["start_time"]), mins(q["end_time"])
    best = None
    for r in rooms:
        cap = r["theatre_capacity"] * pct[q["layout"]] // 100
        if r["venue_id"] != q["venue_id"] or cap < q["attendees"]:
            continue
        if (q["needs_av"] and not r["has_av"]) or (q["needs_step_free"] and not r["step_free"]):
            continue
        if any(d0 <= q["event_date"] <= d1 for d0, d1 in closed.get(r["id"], [])):
            continue
        if any(s < be + buffer and bs < e + buffer for bs, be in busy.get((r["id"], q["event_date"]), [])):
            continue
        if best is None or (cap, r["daily_rate"], r["id"]) < best:
            best = (cap, r["daily_rate"], r["id"])
    if best is None:
        tools["decline_request"](request_id=q["id"], reason_code="NO_ROOM")
        n_decl += 1
    else:
        tools["assign_room"](request_id=q["id"], room_id=best[2])
        busy.setdefault((best[2], q["event_date"]), []).append((s, e))
        n_alloc += 1
print("allocated", n_alloc, "declined", n_decl)
final_answer = f"October run done.\nANSWER: {n_alloc}, {n_decl}"
