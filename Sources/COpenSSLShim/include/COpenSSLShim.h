#ifndef COPENSSLSHIM_H
#define COPENSSLSHIM_H
/* OpenSSL macros and stack helpers, as plain functions for Swift. */
#include <openssl/x509.h>
#include <openssl/cms.h>
#include <openssl/bio.h>

void COpenSSLShim_free(void *pointer);
/* The oldest error on the thread's queue as text (into buf), or empty; clears the queue. */
void COpenSSLShim_last_error(char *buf, int size);
STACK_OF(X509) *COpenSSLShim_x509_stack_new(void);
int COpenSSLShim_x509_stack_push(STACK_OF(X509) *stack, X509 *cert);
void COpenSSLShim_x509_stack_free(STACK_OF(X509) *stack);
int COpenSSLShim_x509_stack_count(const STACK_OF(X509) *stack);
X509 *COpenSSLShim_x509_stack_value(const STACK_OF(X509) *stack, int index);
/* Copies a memory BIO's contents out: returns length, sets *data to BIO-owned storage. */
long COpenSSLShim_bio_mem_data(BIO *bio, char **data);
/* XN_FLAG_RFC2253 (a composite macro). */
unsigned long COpenSSLShim_name_flags_rfc2253(void);
#endif
