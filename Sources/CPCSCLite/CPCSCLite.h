#ifndef CPCSCLITE_H
#define CPCSCLITE_H
#include <PCSC/winscard.h>
#include <PCSC/pcsclite.h>
#include <PCSC/reader.h>
#endif
