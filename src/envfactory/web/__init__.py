"""Web worlds: every database domain as a website, driven through a real headless browser."""
