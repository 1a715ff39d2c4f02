// Real functions for the OpenSSL macros (and variadic calls) Swift cannot import.
#ifndef C_TLS_SHIMS_H
#define C_TLS_SHIMS_H
#include <stddef.h>
#include <stdint.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

int ctls_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version);
int ctls_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version);
long ctls_SSL_CTX_set_mode(SSL_CTX *ctx, long mode);
int ctls_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *cert);
long ctls_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode);
int ctls_SSL_set_tlsext_host_name(SSL *ssl, const char *name);
long ctls_BIO_get_mem_data(BIO *bio, char **data);
/// The first certificate the peer presented, verified or not (NULL if none); not owned.
X509 *ctls_peer_presented_leaf(const SSL *ssl);
/// Writes the certificate's subjectAltName DNS names and IP addresses to
/// `out`, one a line (IP addresses as text); 0 when it has none.
int ctls_x509_write_alt_names(X509 *cert, BIO *out);
/// A fresh EC P-256 private key (EVP_EC_gen is a variadic macro), or NULL.
EVP_PKEY *ctls_generate_ec_p256_key(void);
/// The protocol version constants (macros) as values Swift can see.
int ctls_TLS1_2_VERSION(void);
int ctls_TLS1_3_VERSION(void);
/// SSL_OP_* flags are built from a function-like macro: no renegotiation,
/// no compression, server cipher preference.
uint64_t ctls_default_options(void);
/// SSL_OP_NO_TICKET: a server sends no TLS 1.2 session tickets.
uint64_t ctls_no_ticket_option(void);
/// XN_FLAG_RFC2253 combines several macros.
unsigned long ctls_XN_FLAG_RFC2253(void);

/// The state of a window BIO (ctls_window_bio_new). Reads take from `in`,
/// lent by the caller for one OpenSSL call; an empty window asks to retry.
/// Writes go to `out` up to `out_capacity`, also lent for one call, and what
/// does not fit (or is written with no window lent) waits in `overflow`,
/// in order: writes never fail for lack of room.
typedef struct {
    const uint8_t *in;
    size_t in_length;
    uint8_t *out;
    size_t out_capacity;
    size_t out_length;
    uint8_t *overflow;
    size_t overflow_length;
    size_t overflow_capacity;
} ctls_window;
/// A new window BIO, or NULL.
BIO *ctls_window_bio_new(void);
ctls_window *ctls_window_bio_state(BIO *bio);
/// Copies the overflow (overflow_length bytes) into `into` and empties it.
void ctls_window_take_overflow(ctls_window *window, uint8_t *into);
#endif
