#ifndef C_CURL_SHIM_H
#define C_CURL_SHIM_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic: Swift cannot call them. One typed
   function a kind of argument, nothing else; the policy (what is set, and to what) is Swift's. */

typedef size_t (*CCurlShim_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*CCurlShim_progress_callback)(void *context, curl_off_t download_total, curl_off_t download_now,
                                           curl_off_t upload_total, curl_off_t upload_now);

CURLcode CCurlShim_set_long(CURL *handle, CURLoption option, long value);
CURLcode CCurlShim_set_offset(CURL *handle, CURLoption option, curl_off_t value);
CURLcode CCurlShim_set_string(CURL *handle, CURLoption option, const char *value);
CURLcode CCurlShim_set_pointer(CURL *handle, CURLoption option, void *value);
CURLcode CCurlShim_set_list(CURL *handle, CURLoption option, struct curl_slist *value);
/* CURLOPT_WRITEFUNCTION / CURLOPT_HEADERFUNCTION with their data pointer. */
CURLcode CCurlShim_set_write(CURL *handle, CCurlShim_data_callback callback, void *context);
CURLcode CCurlShim_set_header(CURL *handle, CCurlShim_data_callback callback, void *context);
/* CURLOPT_XFERINFOFUNCTION with its data pointer, and CURLOPT_NOPROGRESS 0. */
CURLcode CCurlShim_set_progress(CURL *handle, CCurlShim_progress_callback callback, void *context);

CURLcode CCurlShim_get_long(CURL *handle, CURLINFO info, long *value);
CURLcode CCurlShim_get_string(CURL *handle, CURLINFO info, const char **value);
CURLcode CCurlShim_get_offset(CURL *handle, CURLINFO info, curl_off_t *value);

/* curl_global_init(CURL_GLOBAL_DEFAULT), once, before any thread makes a handle. */
CURLcode CCurlShim_global_init(void);

/* The CURL_* constants Swift does not see (macros over enums). */
long CCurlShim_http_version_1_1(void);
long CCurlShim_ssl_version_tls_1_2(void);

#endif
