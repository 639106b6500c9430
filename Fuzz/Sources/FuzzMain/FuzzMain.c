// Entry points for the fuzz executables under SwiftPM.
//
// SwiftPM links an ELF executable with `--defsym main=<Module>_main` so that tests can call an executable's
// entry point under another name; a target compiled with `-parse-as-library` (which libFuzzer needs, since it
// brings its own `main`) emits no `<Module>_main`, and the link fails. Each function here is that symbol for one
// target and hands control to libFuzzer's driver (`LLVMFuzzerRunDriver`, libFuzzer's documented entry point
// for programs with their own main, LLVM 11 and later) with the target's `LLVMFuzzerTestOneInput`.
#include "FuzzMain.h"

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const unsigned char *data, unsigned long size));
int LLVMFuzzerTestOneInput(const unsigned char *data, unsigned long size);

static int run(int argc, char **argv) { return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput); }

int FuzzNMEA_main(int argc, char **argv) { return run(argc, argv); }
int FuzzWire_main(int argc, char **argv) { return run(argc, argv); }
int FuzzGpsd_main(int argc, char **argv) { return run(argc, argv); }
int FuzzConfig_main(int argc, char **argv) { return run(argc, argv); }
int FuzzServer_main(int argc, char **argv) { return run(argc, argv); }
