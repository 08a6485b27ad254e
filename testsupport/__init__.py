"""testsupport package."""
