#include "CCurlShim.h"

CURLcode CCurlShim_set_long(CURL *handle, CURLoption option, long value) { return curl_easy_setopt(handle, option, value); }
CURLcode CCurlShim_set_offset(CURL *handle, CURLoption option, curl_off_t value) { return curl_easy_setopt(handle, option, value); }
CURLcode CCurlShim_set_string(CURL *handle, CURLoption option, const char *value) { return curl_easy_setopt(handle, option, value); }
CURLcode CCurlShim_set_pointer(CURL *handle, CURLoption option, void *value) { return curl_easy_setopt(handle, option, value); }
CURLcode CCurlShim_set_list(CURL *handle, CURLoption option, struct curl_slist *value) { return curl_easy_setopt(handle, option, value); }

CURLcode CCurlShim_set_write(CURL *handle, CCurlShim_data_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_WRITEDATA, context);
}

CURLcode CCurlShim_set_header(CURL *handle, CCurlShim_data_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_HEADERDATA, context);
}

CURLcode CCurlShim_set_progress(CURL *handle, CCurlShim_progress_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_XFERINFODATA, context);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
}

CURLcode CCurlShim_get_long(CURL *handle, CURLINFO info, long *value) { return curl_easy_getinfo(handle, info, value); }
CURLcode CCurlShim_get_string(CURL *handle, CURLINFO info, const char **value) { return curl_easy_getinfo(handle, info, value); }
CURLcode CCurlShim_get_offset(CURL *handle, CURLINFO info, curl_off_t *value) { return curl_easy_getinfo(handle, info, value); }

long CCurlShim_http_version_1_1(void) { return CURL_HTTP_VERSION_1_1; }
long CCurlShim_ssl_version_tls_1_2(void) { return CURL_SSLVERSION_TLSv1_2; }
CURLcode CCurlShim_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }
