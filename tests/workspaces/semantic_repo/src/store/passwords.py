import hashlib
import hmac
import os


def hash_secret(plain: str) -> str:
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", plain.encode(), salt, 600_000)
    return salt.hex() + ":" + digest.hex()


def verify_secret(plain: str, stored: str) -> bool:
    salt_hex, digest_hex = stored.split(":")
    digest = hashlib.pbkdf2_hmac("sha256", plain.encode(), bytes.fromhex(salt_hex), 600_000)
    return hmac.compare_digest(digest.hex(), digest_hex)
