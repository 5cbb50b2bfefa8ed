"""The LLM providers (and most remote upstreams) are https: the service must speak TLS and check
certificates against the system's trust store. A local provider behind TLS, with a certificate
from a CA this test makes, is trusted only when that CA is in the store (SSL_CERT_FILE)."""

import datetime
import ipaddress
import ssl

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from fake_llm import page
from test_generation import gen_proxy, read_ui


def make_ca_and_server_cert(tmp_path):
    """A CA, and a certificate for 127.0.0.1 that it signed. Returns (ca.pem, cert.pem, key.pem)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcp-gen-ui test CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])).issuer_name(ca_name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return paths


def serve_tls(fake, cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    # Same listening descriptor, now handing out TLS connections.
    fake.server.socket = ctx.wrap_socket(fake.server.socket, server_side=True)


def https(base: str) -> str:
    return base.replace("http://", "https://", 1)


def test_a_provider_over_tls_with_a_trusted_certificate(fake, tmp_path):
    ca, cert, key = make_ca_and_server_cert(tmp_path)
    serve_tls(fake, cert, key)
    fake.default = {"html": page("PAGE-OVER-TLS")}
    url = https(fake.base("anthropic"))
    with gen_proxy(fake, "anthropic", base_url=url, name="proxy-tls", tmp_path=tmp_path, env={"SSL_CERT_FILE": str(ca)}) as (base, _):
        html, meta = read_ui(base)
    assert meta["kind"] == "generated", meta
    assert "PAGE-OVER-TLS" in html
    assert fake.generations(), "the request reached the provider over TLS"


def test_an_untrusted_certificate_is_refused(fake, tmp_path):
    _, cert, key = make_ca_and_server_cert(tmp_path)
    serve_tls(fake, cert, key)
    url = https(fake.base("anthropic"))
    with gen_proxy(fake, "anthropic", base_url=url, name="proxy-tls-untrusted", tmp_path=tmp_path,
                   config={"generation": {"maxRetries": 0}}) as (base, _):
        _, meta = read_ui(base)
    assert meta["kind"] == "template" and meta["fallbackReason"] == "NETWORK_ERROR", meta
    assert not fake.generations(), "no request is sent over a connection whose certificate is not trusted"
