#include "CPKCS11Shim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

static void say(char *error, size_t error_len, const char *what, CK_RV rv) {
    if (rv == CKR_OK) snprintf(error, error_len, "%s", what);
    else snprintf(error, error_len, "%s (CKR 0x%lX)", what, (unsigned long)rv);
}

/* A PKCS#11 token label: 32 bytes, blank padded. */
static int label_matches(const unsigned char label[32], const char *wanted) {
    size_t length = 32;
    while (length > 0 && (label[length - 1] == ' ' || label[length - 1] == 0)) length--;
    return strlen(wanted) == length && memcmp(label, wanted, length) == 0;
}

int gbgbridge_pkcs11_sign(const char *module_path, const char *token_label, const char *object_label,
                          const uint8_t *id, size_t id_len, const char *pin, int kind,
                          unsigned long pss_hash, unsigned long pss_mgf, unsigned long pss_salt,
                          const uint8_t *data, size_t data_len, uint8_t *out, size_t *out_len,
                          char *error, size_t error_len) {
    int result = -1;
    void *module = dlopen(module_path, RTLD_NOW | RTLD_LOCAL);
    if (!module) {
        snprintf(error, error_len, "cannot load the PKCS#11 module %s: %s", module_path, dlerror());
        return -1;
    }
    CK_C_GetFunctionList get_list = (CK_C_GetFunctionList)dlsym(module, "C_GetFunctionList");
    CK_FUNCTION_LIST_PTR p11 = NULL;
    CK_RV rv;
    if (!get_list || (rv = get_list(&p11)) != CKR_OK || !p11) {
        snprintf(error, error_len, "%s is not a PKCS#11 module (no C_GetFunctionList)", module_path);
        dlclose(module);
        return -1;
    }
    rv = p11->C_Initialize(NULL);
    int initialized = rv == CKR_OK;
    if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED) {
        say(error, error_len, "C_Initialize failed", rv);
        dlclose(module);
        return -1;
    }
    CK_SLOT_ID slots[64];
    CK_ULONG count = 64;
    CK_SESSION_HANDLE session = CK_INVALID_HANDLE;
    int logged_in = 0;
    rv = p11->C_GetSlotList(CK_TRUE, slots, &count);
    if (rv != CKR_OK) { say(error, error_len, "C_GetSlotList failed", rv); goto done; }
    CK_SLOT_ID slot = 0;
    int found = 0;
    for (CK_ULONG i = 0; i < count && !found; i++) {
        CK_TOKEN_INFO info;
        if (p11->C_GetTokenInfo(slots[i], &info) != CKR_OK) continue;
        if (!token_label || label_matches(info.label, token_label)) { slot = slots[i]; found = 1; }
    }
    if (!found) {
        snprintf(error, error_len, token_label ? "no token labelled '%s' in %s" : "no token in %s%s",
                 token_label ? token_label : "", module_path);
        goto done;
    }
    rv = p11->C_OpenSession(slot, CKF_SERIAL_SESSION, NULL, NULL, &session);
    if (rv != CKR_OK) { say(error, error_len, "C_OpenSession failed", rv); goto done; }
    if (pin) {
        rv = p11->C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin));
        if (rv == CKR_PIN_INCORRECT) { say(error, error_len, "the token refused the PIN", rv); goto done; }
        if (rv != CKR_OK && rv != CKR_USER_ALREADY_LOGGED_IN) { say(error, error_len, "C_Login failed", rv); goto done; }
        logged_in = rv == CKR_OK;
    }
    CK_OBJECT_CLASS key_class = CKO_PRIVATE_KEY;
    CK_ATTRIBUTE template[3];
    CK_ULONG attributes = 0;
    template[attributes].type = CKA_CLASS; template[attributes].pValue = &key_class; template[attributes].ulValueLen = sizeof key_class; attributes++;
    if (object_label) { template[attributes].type = CKA_LABEL; template[attributes].pValue = (void *)object_label; template[attributes].ulValueLen = strlen(object_label); attributes++; }
    if (id && id_len) { template[attributes].type = CKA_ID; template[attributes].pValue = (void *)id; template[attributes].ulValueLen = id_len; attributes++; }
    rv = p11->C_FindObjectsInit(session, template, attributes);
    if (rv != CKR_OK) { say(error, error_len, "C_FindObjectsInit failed", rv); goto done; }
    CK_OBJECT_HANDLE keys[2];
    CK_ULONG keys_found = 0;
    rv = p11->C_FindObjects(session, keys, 2, &keys_found);
    p11->C_FindObjectsFinal(session);
    if (rv != CKR_OK) { say(error, error_len, "C_FindObjects failed", rv); goto done; }
    if (keys_found == 0) {
        snprintf(error, error_len, "no private key%s%s on the token%s", object_label ? " labelled " : "", object_label ? object_label : "",
                 pin ? "" : " (no PIN given: private keys need pin-value or pin-source)");
        goto done;
    }
    if (keys_found > 1) { snprintf(error, error_len, "several private keys match: name one with object= or id="); goto done; }
    CK_MECHANISM mechanism = { CKM_ECDSA, NULL, 0 };
    CK_RSA_PKCS_PSS_PARAMS pss = { pss_hash, pss_mgf, pss_salt };
    if (kind == GBG_P11_RSA_PKCS) mechanism.mechanism = CKM_RSA_PKCS;
    if (kind == GBG_P11_RSA_PSS) { mechanism.mechanism = CKM_RSA_PKCS_PSS; mechanism.pParameter = &pss; mechanism.ulParameterLen = sizeof pss; }
    rv = p11->C_SignInit(session, &mechanism, keys[0]);
    if (rv != CKR_OK) { say(error, error_len, "C_SignInit failed (does the key fit the certificate's algorithm?)", rv); goto done; }
    CK_ULONG length = (CK_ULONG)*out_len;
    rv = p11->C_Sign(session, (CK_BYTE_PTR)data, data_len, out, &length);
    if (rv != CKR_OK) { say(error, error_len, "C_Sign failed", rv); goto done; }
    *out_len = (size_t)length;
    result = 0;
done:
    if (logged_in) p11->C_Logout(session);
    if (session != CK_INVALID_HANDLE) p11->C_CloseSession(session);
    if (initialized) p11->C_Finalize(NULL);
    dlclose(module);
    return result;
}
