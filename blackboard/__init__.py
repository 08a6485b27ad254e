"""blackboard package."""
