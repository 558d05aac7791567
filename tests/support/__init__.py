"""Test support code shared by unit and e2e tests."""
