# Wrong: also closes reopened tickets.
ids = [t["id"] for t in tools["list_tickets"]()["items"] if t["status"] in ("resolved", "reopened")]
tools["close_tickets"](ticket_ids=ids)
tools["post_summary"](closed=len(ids))
final_answer = "ANSWER: done"
