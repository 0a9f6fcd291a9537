import ssl


def make_secure_context(ca_file=None):
    ctx = ssl.create_default_context(cafile=ca_file)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = True
    return ctx


def fingerprint_matches(cert_der, expected_sha256):
    import hashlib
    return hashlib.sha256(cert_der).hexdigest() == expected_sha256.lower()
