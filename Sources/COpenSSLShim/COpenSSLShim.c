#include "COpenSSLShim.h"
#include <openssl/err.h>
#include <openssl/crypto.h>
#include <string.h>

void COpenSSLShim_free(void *pointer) { OPENSSL_free(pointer); }

void COpenSSLShim_last_error(char *buf, int size) {
    unsigned long code = ERR_get_error();
    if (size > 0) buf[0] = 0;
    if (code != 0 && size > 0) ERR_error_string_n(code, buf, (size_t)size);
    ERR_clear_error();
}

STACK_OF(X509) *COpenSSLShim_x509_stack_new(void) { return sk_X509_new_null(); }
int COpenSSLShim_x509_stack_push(STACK_OF(X509) *stack, X509 *cert) { return sk_X509_push(stack, cert); }
void COpenSSLShim_x509_stack_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }
int COpenSSLShim_x509_stack_count(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
X509 *COpenSSLShim_x509_stack_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
long COpenSSLShim_bio_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }
unsigned long COpenSSLShim_name_flags_rfc2253(void) { return XN_FLAG_RFC2253; }
