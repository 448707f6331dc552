"""sample_project/ is a user's test suite, run by test_plugin.py in a pytest of its own."""

collect_ignore = ["sample_project"]
