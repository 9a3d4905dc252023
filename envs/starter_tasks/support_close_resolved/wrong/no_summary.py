# Wrong: closes the right tickets, posts no summary and gives no answer line.
ids = [t["id"] for t in tools["list_tickets"](status="resolved")["items"]]
tools["close_tickets"](ticket_ids=ids)
final_answer = "closed them"
