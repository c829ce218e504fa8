// Entry point of the `stripeline` program (being written: see tools/).
#include <cstdio>
int main() { std::puts("stripeline"); return 0; }
