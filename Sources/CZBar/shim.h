// ZBar (Debian's libzbar-dev): QR codes in the confined decoder (mdoc QR engagement, issue 52).
#include <zbar.h>
