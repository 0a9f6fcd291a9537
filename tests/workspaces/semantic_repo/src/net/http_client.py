"""HTTP client helpers."""

import random
import time


class TooManyRequests(Exception):
    pass


def call_with_backoff(send, tries=5):
    """Call send(); after a 429 answer sleep an exponentially growing pause and try again."""
    for n in range(tries):
        try:
            return send()
        except TooManyRequests:
            time.sleep((2 ** n) + random.random())
    raise TooManyRequests()


def parse_cookie_header(header):
    jar = {}
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key:
            jar[key] = value
    return jar


def build_user_agent(product, version):
    return f"{product}/{version} (+python)"
