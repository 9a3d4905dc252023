# Wrong: approves every pending request without checking the balance.
for r in tools["list_leave_requests"](status="pending")["items"]:
    tools["decide_leave"](request_id=r["id"], approve=True)
final_answer = "ANSWER: done"
