// Entry points that SwiftPM's link of each fuzz executable asks for (see FuzzMain.c).
int FuzzNMEA_main(int argc, char **argv);
int FuzzWire_main(int argc, char **argv);
int FuzzGpsd_main(int argc, char **argv);
int FuzzConfig_main(int argc, char **argv);
int FuzzServer_main(int argc, char **argv);
