"""The origin secrets the suite's server is started with (test values, not secrets)."""

SECRET = "fd-test-origin-secret-0123456789abcdefghijklmnopqrstuvwxyz"
SECONDARY = "fd-test-rotated-secret-zyxwvutsrqponmlkjihgfedcba9876543210"
