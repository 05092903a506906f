#!/usr/bin/env python3
"""Cross-check GuestPassCrypto's JWTs against PyJWT, an independent implementation, in both directions.

1. PyJWT signs an ES256 and an HS256 token (fresh keys) into a temporary directory.
2. `swift test --filter GuestPassCryptoTests.CrossCheckTests` runs with GUESTPASS_CROSSCHECK_DIR set: the Swift
   verifier must accept PyJWT's tokens, and the Swift signer writes its own tokens, public key and JWKS.
3. PyJWT verifies the Swift tokens (with the PEM and with the JWKS entry), checks the ES256 signature is the
   64-byte JOSE form, that `kid` is the RFC 7638 thumbprint, and that a tampered token is rejected.

Requires PyJWT and cryptography: `pip install pyjwt cryptography` (for example in a venv created with
`python3 -m venv --system-site-packages .venv`). Run from anywhere: `python3 Tests/GuestPassCryptoTests/crosscheck.py`.
Exit status 0 means every check passed.
"""
import base64
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

try:
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
except ImportError as error:
    sys.exit(f"crosscheck: missing dependency ({error}); run: pip install pyjwt cryptography")

PACKAGE_ROOT = pathlib.Path(__file__).resolve().parents[2]


def b64u_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64u_encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def check(condition, label):
    print(("ok   " if condition else "FAIL ") + label)
    if not condition:
        check.failures += 1


check.failures = 0


def main():
    with tempfile.TemporaryDirectory(prefix="guestpass-crosscheck-") as directory:
        path = pathlib.Path(directory)
        now = int(time.time())
        claims = {"sub": "from-python", "iss": "crosscheck", "aud": "api", "iat": now, "exp": now + 600}

        es_key = ec.generate_private_key(ec.SECP256R1())
        (path / "python_es256_pub.pem").write_bytes(
            es_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        (path / "python_es256.jwt").write_text(jwt.encode(claims, es_key, algorithm="ES256", headers={"kid": "py-es"}))
        secret = os.urandom(32)
        (path / "hs256_secret.hex").write_text(secret.hex())
        (path / "python_hs256.jwt").write_text(jwt.encode(claims, secret, algorithm="HS256", headers={"kid": "py-hs"}))

        env = dict(os.environ, GUESTPASS_CROSSCHECK_DIR=directory)
        run = subprocess.run(
            ["swift", "test", "--filter", "GuestPassCryptoTests.CrossCheckTests"],
            cwd=PACKAGE_ROOT, env=env, capture_output=True, text=True)
        check(run.returncode == 0, "Swift verifies PyJWT's ES256 and HS256 tokens (swift test exit 0)")
        if run.returncode != 0 or not (path / "swift_es256.jwt").exists():
            print(run.stdout[-4000:], run.stderr[-4000:], sep="\n")
            return 1

        options = {"audience": "api", "issuer": "crosscheck", "options": {"require": ["exp", "iat"]}}
        token = (path / "swift_es256.jwt").read_text()
        public_pem = (path / "swift_es256_pub.pem").read_bytes()
        decoded = jwt.decode(token, public_pem, algorithms=["ES256"], **options)
        check(decoded["sub"] == "from-swift", "PyJWT verifies Swift's ES256 token with the PEM public key")

        header = jwt.get_unverified_header(token)
        check(header == {"alg": "ES256", "kid": header.get("kid"), "typ": "JWT"}, f"ES256 header {header}")
        check(len(b64u_decode(token.split(".")[2])) == 64, "ES256 signature is 64 raw bytes (R||S), not DER")

        jwks = json.loads((path / "swift_jwks.json").read_text())
        entry = jwks["keys"][0]
        check(len(jwks["keys"]) == 1 and entry["kid"] == header["kid"], "JWKS holds the signing key under its kid")
        check("d" not in entry, "JWKS entry has no private member")
        jwk_key = jwt.PyJWK(entry).key
        check(jwt.decode(token, jwk_key, algorithms=["ES256"], **options)["sub"] == "from-swift",
              "PyJWT verifies Swift's ES256 token with the JWKS entry")
        canonical = json.dumps({k: entry[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
        thumbprint = b64u_encode(hashlib.sha256(canonical.encode()).digest())
        check(thumbprint == header["kid"] == (path / "swift_es256.kid").read_text(), "kid is the RFC 7638 thumbprint")

        hs_token = (path / "swift_hs256.jwt").read_text()
        check(jwt.decode(hs_token, secret, algorithms=["HS256"], **options)["sub"] == "from-swift",
              "PyJWT verifies Swift's HS256 token")

        head, payload, signature = token.split(".")
        forged = b64u_encode(json.dumps(dict(decoded, sub="admin")).encode())
        try:
            jwt.decode(f"{head}.{forged}.{signature}", public_pem, algorithms=["ES256"], **options)
            check(False, "PyJWT rejects a tampered Swift token")
        except jwt.InvalidSignatureError:
            check(True, "PyJWT rejects a tampered Swift token")

    print("crosscheck:", "all checks passed" if check.failures == 0 else f"{check.failures} check(s) failed")
    return 0 if check.failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
