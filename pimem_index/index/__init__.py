"""The write side: journals parsed, redacted and written into the index (store rows and terms), pass by pass."""
