#include "CTLSShims.h"
#include <arpa/inet.h>
#include <openssl/x509v3.h>

int ctls_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

int ctls_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

long ctls_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

int ctls_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return (int)SSL_CTX_add1_chain_cert(ctx, cert);
}

long ctls_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

int ctls_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

long ctls_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

EVP_PKEY *ctls_generate_ec_p256_key(void) {
    return EVP_EC_gen("P-256");
}

int ctls_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }
int ctls_TLS1_3_VERSION(void) { return TLS1_3_VERSION; }

uint64_t ctls_default_options(void) {
    return SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE;
}

uint64_t ctls_no_ticket_option(void) { return SSL_OP_NO_TICKET; }

unsigned long ctls_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }

X509 *ctls_peer_presented_leaf(const SSL *ssl) {
    STACK_OF(X509) *chain = SSL_get_peer_cert_chain(ssl);
    return chain != NULL && sk_X509_num(chain) > 0 ? sk_X509_value(chain, 0) : NULL;
}

int ctls_x509_write_alt_names(X509 *cert, BIO *out) {
    GENERAL_NAMES *names = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    if (names == NULL) return 0;
    for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
        const GENERAL_NAME *name = sk_GENERAL_NAME_value(names, i);
        if (name->type == GEN_DNS) {
            BIO_write(out, ASN1_STRING_get0_data(name->d.dNSName), ASN1_STRING_length(name->d.dNSName));
            BIO_write(out, "\n", 1);
        } else if (name->type == GEN_IPADD) {
            char text[INET6_ADDRSTRLEN];
            int length = ASN1_STRING_length(name->d.iPAddress);
            int family = length == 4 ? AF_INET : (length == 16 ? AF_INET6 : 0);
            if (family != 0 && inet_ntop(family, ASN1_STRING_get0_data(name->d.iPAddress), text, sizeof(text)) != NULL) {
                BIO_puts(out, text);
                BIO_write(out, "\n", 1);
            }
        }
    }
    GENERAL_NAMES_free(names);
    return 1;
}
