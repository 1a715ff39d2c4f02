// The parts of the system OpenSSL 3 (libssl-dev) the TLS layer uses.
#ifndef C_OPENSSL_H
#define C_OPENSSL_H
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#endif
