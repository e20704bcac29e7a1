"""Placeholder: replaced by the real demo as parts land."""
print("kennel demo: nothing to show yet")
