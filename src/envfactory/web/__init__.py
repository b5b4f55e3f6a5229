"""Web worlds: every database domain as a website, driven through a real headless browser."""

from envfactory.web.environment import WebEnvironment, WebHidden

__all__ = ["WebEnvironment", "WebHidden"]
