ids = [t["id"] for t in tools["list_tickets"](status="resolved")["items"]]
tools["close_tickets"](ticket_ids=ids)
tools["post_summary"](closed=len(ids))
final_answer = "ANSWER: done"
print(len(ids), "closed")
