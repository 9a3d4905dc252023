# ruff: noqa: F821, E402
# WRONG: reroutes economy shipments like the others instead of holding them as economy_deferred.

# %%
import re


def all_pages(name, **kw):
    items, p = [], 1
    while p:
        r = tools[name](page_no=p, **kw)
        items += r["items"]
        p = r["next_page"]
    return items

files = [f["path"] for f in all_pages("list_files")]
advisories = sorted(f for f in files if f.startswith("ops/advisories/"))
closures = []
for path in advisories:
    text = tools["read_file"](path=path)["content"]
    m = re.search(r"\((\w{3})\)[^.]*?clos\w+\s+from\s+\*{0,2}(\d{4}-\d{2}-\d{2})\*{0,2}\s+through\s+\*{0,2}(\d{4}-\d{2}-\d{2})", text)
    if m:
        closures.append((path, m.group(1), m.group(2), m.group(3)))
print(len(files), "files,", len(advisories), "advisories; closures found:", closures)
_path, CLOSED, FIRST, LAST = closures[-1]          # the most recent advisory supersedes earlier ones
print("closure:", CLOSED, FIRST, LAST)

# %%
import csv
import io
import json

playbook = tools["read_file"](path="ops/playbooks/hub_closure_playbook.md")["content"]
print([ln for ln in playbook.splitlines() if ln.startswith("## ")])
matrix = json.loads(tools["read_file"](path="network/reroute_matrix.json")["content"])["alternates"][CLOSED]
spare, hazmat_ok, cold_ok = {}, {}, {}
for r in csv.DictReader(io.StringIO(tools["read_file"](path="network/hub_spare_capacity_2025-11.csv")["content"])):
    spare[(r["hub"], r["date"])] = int(r["spare_pallets"])
    hazmat_ok[r["hub"]] = r["hazmat_certified"] == "yes"
    cold_ok[r["hub"]] = r["cold_dock"] == "yes"
print("alternates:", matrix)

# %%
stops = all_pages("list_route_stops", hub_code=CLOSED, date_from=FIRST, date_to=LAST, status="planned")
ids = sorted({s["shipment_id"] for s in stops})
ships = {}
for i in range(0, len(ids), 50):
    for s in tools["get_shipments"](shipment_ids=ids[i:i + 50])["items"]:
        ships[s["shipment_id"]] = s
affected = []
for st in stops:
    s = ships[st["shipment_id"]]
    if s["status"] in ("scheduled", "in_transit"):
        affected.append((s, st))
print(len(stops), "planned stops at", CLOSED, "in the window;", len(affected), "live shipments affected")

# %%
RANK = {"critical": 0, "express": 1, "standard": 2, "economy": 3}
affected.sort(key=lambda t: (RANK[t[0]["service_level"]], t[0]["promised_date"], t[0]["shipment_id"]))
rerouted = held = 0
pallets_by_hub = {}
for s, st in affected:
    for hub in matrix[s["dest_region"]]:
        key = (hub, st["planned_date"])
        if spare.get(key, 0) >= s["pallets"] and (not s["hazmat"] or hazmat_ok[hub]) and \
                (not s["temp_controlled"] or cold_ok[hub]):
            spare[key] -= s["pallets"]
            tools["reroute_shipment"](shipment_id=s["shipment_id"], stop_id=st["stop_id"], new_hub=hub)
            pallets_by_hub[hub] = pallets_by_hub.get(hub, 0) + s["pallets"]
            rerouted += 1
            break
    else:
        tools["hold_shipment"](shipment_id=s["shipment_id"], reason="no_alternate")
        held += 1

top = max(sorted(pallets_by_hub), key=lambda h: pallets_by_hub[h])
print("rerouted", rerouted, "held", held, "pallets by hub", dict(sorted(pallets_by_hub.items())))
final_answer = f"Re-planned {len(affected)} shipments.\nANSWER: {rerouted}; {held}; {top}"
