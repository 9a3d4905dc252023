for r in tools["list_leave_requests"](status="pending")["items"]:
    balance = tools["get_employee"](employee_id=r["employee_id"])["balance"]
    tools["decide_leave"](request_id=r["id"], approve=r["days"] <= balance)
final_answer = "ANSWER: done"
print("decided")
