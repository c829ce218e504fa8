// Real-time scheduling of the merge's and the proxy's threads
// (core/thread_scheduling.h, streaming/zmq_context.h): CPU lists parsed as
// taskset writes them, bounds refused with one line naming the key, the
// right refused with one line when the process lacks it, and, where it has
// it, the merge's and the proxy's threads (their own and ZeroMQ's I/O
// threads) found running SCHED_FIFO while they work.
#include <gtest/gtest.h>

#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/errors.h"
#include "core/thread_scheduling.h"
#include "streaming/merge.h"
#include "streaming/proxy.h"
#include "streaming/publisher.h"
#include "streaming/subscriber.h"

namespace stripeline {
namespace {

using namespace std::chrono_literals;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

// This process's threads whose policy (/proc/self/task/TID/stat field 41) is SCHED_FIFO.
int fifo_threads() {
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');  // the name may hold spaces; the fields after it are plain
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string f;
    for (int i = 3; i <= 41 && fields >> f; ++i)
      if (i == 41 && std::stoi(f) == SCHED_FIFO) ++n;
  }
  return n;
}

// Waits (the threads set themselves as they start) until `n` threads run SCHED_FIFO.
bool wait_for_fifo_threads(int n) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (fifo_threads() < n)
    if (std::chrono::steady_clock::now() > deadline) return false;
    else std::this_thread::sleep_for(10ms);
  return true;
}

bool fifo_permitted(std::string& why) {
  try {
    ThreadScheduling{1, {}}.check_permitted("probe");
    return true;
  } catch (const ConfigError& e) {
    why = e.what();
    return false;
  }
}

TEST(ThreadScheduling, CpuListsParseAsTasksetWritesThem) {
  EXPECT_EQ(parse_cpu_list("0-3,6", "k"), (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(parse_cpu_list("1", "k"), (std::vector<int>{1}));
  EXPECT_TRUE(parse_cpu_list("", "k").empty());
  for (const char* bad : {"a", "3-1", "1,,2", "1-", "-1", "1,", " 1", "99999"}) {
    const std::string e = error_of([&] { parse_cpu_list(bad, "merge.cpus"); });
    EXPECT_EQ(e, std::string("merge.cpus: '") + bad + "' (expected CPU numbers such as 2,3 or 0-3,6)");
  }
}

TEST(ThreadScheduling, OutOfRangeValuesGiveOneLineNamingTheKey) {
  EXPECT_EQ(error_of([] { ThreadScheduling{100, {}}.validate("--realtime-priority"); }),
            "--realtime-priority: real-time priority 100 (expected 0 = off, or 1..99 for SCHED_FIFO)");
  EXPECT_EQ(error_of([] { ThreadScheduling{-1, {}}.validate("p"); }).rfind("p: real-time priority -1", 0), 0u);
  const int cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_CONF));
  EXPECT_EQ(error_of([&] { ThreadScheduling{0, {cpus}}.validate("--cpus"); }),
            "--cpus: CPU " + std::to_string(cpus) + " (expected 0.." + std::to_string(cpus - 1) + " on this host)");
  EXPECT_NO_THROW(ThreadScheduling({0, {0}}).validate("--cpus"));
  EXPECT_EQ(ThreadScheduling({20, {0, 1}}).describe(), "fifo 20, cpus 0,1");
  EXPECT_EQ(ThreadScheduling{}.describe(), "default");
}

// Without CAP_SYS_NICE and with an RLIMIT_RTPRIO of 0 (a user's plain
// process), asking for SCHED_FIFO is one line saying what grants it. In a
// child process that gives its rights up (as root: to nobody).
TEST(ThreadScheduling, WithoutTheRightFifoIsRefusedWithOneLine) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit none{0, 0};
    if (::setrlimit(RLIMIT_RTPRIO, &none) != 0) ::_exit(10);
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0))
      ::_exit(11);
    const std::string e = error_of([] { ThreadScheduling{10, {}}.check_permitted("merge.realtime_priority"); });
    const bool one_line = e.find('\n') == std::string::npos;
    const bool says_why = e.rfind("merge.realtime_priority: SCHED_FIFO priority 10 not permitted (expected CAP_SYS_NICE", 0) == 0;
    ::_exit(one_line && says_why ? 0 : 12);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 11) GTEST_SKIP() << "the child could not give up root (setresuid to 65534 refused: a user namespace without that uid?)";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit failed, 12: no ConfigError or not the expected line";
}

// Spinning FIFO threads (the live path's lanes) under the kernel's
// real-time throttling: one line with the stop a period and the sysctl that
// ends it; nothing when the throttling is off, the thread is not FIFO or
// the files cannot be read. The files in a directory of the test's own.
TEST(ThreadScheduling, SpinningFifoThreadsAreToldOfTheThrottling) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("stripeline-rt-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* name, const char* value) { std::ofstream(dir / name) << value << "\n"; };
  const ThreadScheduling fifo{10, {2, 3}};
  EXPECT_EQ(fifo_spin_throttling(fifo, dir.string()), "");  // no files: nothing to tell
  write("sched_rt_period_us", "1000000");
  write("sched_rt_runtime_us", "950000");
  const std::string note = fifo_spin_throttling(fifo, dir.string());
  EXPECT_NE(note.find("stopped 50 ms of every 1000 ms"), std::string::npos) << note;
  EXPECT_NE(note.find("kernel.sched_rt_runtime_us=-1"), std::string::npos) << note;
  EXPECT_EQ(note.find('\n'), std::string::npos);
  EXPECT_EQ(fifo_spin_throttling(ThreadScheduling{0, {2, 3}}, dir.string()), "");  // not FIFO
  write("sched_rt_runtime_us", "-1");
  EXPECT_EQ(fifo_spin_throttling(fifo, dir.string()), "");  // the throttling off
  std::filesystem::remove_all(dir);
}

TEST(ThreadScheduling, AppliedToTheCallingThreadWhenPermitted) {
  std::string why;
  if (!fifo_permitted(why)) GTEST_SKIP() << "this process may not use SCHED_FIFO: " << why;
  std::thread([] {
    apply_to_current_thread({7, {0}}, "test");
    int policy = 0;
    sched_param p{};
    ASSERT_EQ(::pthread_getschedparam(::pthread_self(), &policy, &p), 0);
    EXPECT_EQ(policy, SCHED_FIFO);
    EXPECT_EQ(p.sched_priority, 7);
    cpu_set_t set;
    ASSERT_EQ(::pthread_getaffinity_np(::pthread_self(), sizeof set, &set), 0);
    EXPECT_EQ(CPU_COUNT(&set), 1);
    EXPECT_TRUE(CPU_ISSET(0, &set));
  }).join();
}

// The merge's thread, its heads' sockets' I/O thread and its output's I/O
// thread run SCHED_FIFO; the proxy's thread and its I/O thread likewise.
TEST(ThreadScheduling, TheMergesAndTheProxysThreadsRunFifo) {
  std::string why;
  if (!fifo_permitted(why)) GTEST_SKIP() << "this process may not use SCHED_FIFO: " << why;
  ASSERT_EQ(fifo_threads(), 0);
  PublisherConfig pc;
  pc.endpoint = "tcp://127.0.0.1:*";
  pc.stats_interval = 0;
  Publisher head(pc);
  {
    MergeServiceConfig mc;
    mc.merge.heads.push_back(HeadTransform::in_plane("a", 0.0, 0.0, 0.0));
    mc.merge.grid = {-10.0, 10.0, 0.5, 0, kernels::RectifyRule::Mean};
    mc.endpoints.push_back(head.endpoint());
    mc.publish = "tcp://127.0.0.1:*";
    mc.scheduling = {5, {}};
    MergeService merge(mc);
    EXPECT_TRUE(wait_for_fifo_threads(3)) << fifo_threads() << " threads run SCHED_FIFO (expected the merge's and two I/O threads)";
    ProxyConfig px;
    px.frontend = merge.publish_endpoint();
    px.backend = "tcp://127.0.0.1:*";
    px.scheduling = {5, {}};
    StreamProxy proxy(px);
    EXPECT_TRUE(wait_for_fifo_threads(5)) << fifo_threads() << " threads run SCHED_FIFO (expected the proxy's and its I/O thread too)";
    Subscriber consumer(SubscriberOptions{proxy.backend_endpoint(), 1000, "", ""});
    EXPECT_TRUE(merge.wait_for_subscribers(1, 10s)) << "a consumer's subscription went through the proxy to the merged stream";
    EXPECT_TRUE(head.wait_for_subscribers(1, 10s)) << "the merge subscribed to the head";
    merge.stop();
  }
  EXPECT_EQ(fifo_threads(), 0) << "the threads ended with their owners";
}

}  // namespace
}  // namespace stripeline
