// `sluice kafka-dev [--brokers N] [--partitions N] [--port P] [--topics T1,T2] [PIPELINE...]`:
// librdkafka's mock cluster (rdkafka_mock.h) as a standalone local Kafka for trying Kafka-fed
// pipelines with `sluice worker` and `kcat`, no broker installed. It speaks the Kafka protocol
// on loopback TCP, keeps everything in memory, and runs until SIGTERM/SIGINT.
//
// The first line of stdout is the bootstrap address (scripts read it). Topics: those named by
// --topics, and the four of every kafka source in the PIPELINE files (jobs with --partitions
// partitions, default 4; results, retry and dead letters with 1), created before that line is
// printed. --port P also listens on 127.0.0.1:P and relays each connection to the first mock
// broker: the mock cluster picks its own ports, and a fixed bootstrap (e.g. 9092, the shipped
// pipeline's default) is what a client is configured with. The brokers then advertise their
// own loopback ports in the metadata, which clients on this machine reach directly.
//
// Not a broker for production: no persistence, no replication, no security.
#include <arpa/inet.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apps/sluice/commands.h"
#include "apps/sluice/registry.h"
#include "graph/spec_validator.h"

namespace sluice::cli {
namespace {

// Copies bytes both ways between two connected sockets until either side closes.
void relay(int a, int b) {
  pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  char buf[64 * 1024];
  for (;;) {
    if (::poll(fds, 2, -1) < 0) break;
    bool closed = false;
    for (int i = 0; i < 2 && !closed; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        closed = true;
        break;
      }
      for (ssize_t sent = 0; sent < n;) {
        const ssize_t w = ::write(fds[1 - i].fd, buf + sent, static_cast<std::size_t>(n - sent));
        if (w <= 0) {
          closed = true;
          break;
        }
        sent += w;
      }
    }
    if (closed) break;
  }
  ::close(a);
  ::close(b);
}

int connect_to(const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(std::stoi(host_port.substr(colon + 1))));
  ::inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &addr.sin_addr);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Listens on 127.0.0.1:port; each connection is relayed to `target` on a thread of its own.
bool start_forwarder(int port, const std::string& target) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 64) != 0) {
    std::fprintf(stderr, "sluice kafka-dev: cannot listen on 127.0.0.1:%d: %s\n", port, std::strerror(errno));
    ::close(listener);
    return false;
  }
  std::thread([listener, target] {
    for (;;) {
      const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int broker = connect_to(target);
      if (broker < 0) {
        ::close(client);
        continue;
      }
      std::thread(relay, client, broker).detach();
    }
  }).detach();
  return true;
}

}  // namespace

int kafka_dev(const Args& args) {
  int brokers = 1, partitions = 4, port = 0;
  std::vector<std::string> topics_jobs, topics_single, files;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (a == "--brokers") {
      brokers = std::stoi(value());
    } else if (a == "--partitions") {
      partitions = std::stoi(value());
    } else if (a == "--port") {
      port = std::stoi(value());
    } else if (a == "--topics") {
      std::string list = value();
      for (std::size_t at = 0; at <= list.size();) {
        const auto comma = std::min(list.find(',', at), list.size());
        if (comma > at) topics_jobs.push_back(list.substr(at, comma - at));
        at = comma + 1;
      }
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "usage: sluice kafka-dev [--brokers N] [--partitions N] [--port P] [--topics T1,T2] [PIPELINE...]\n");
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (brokers < 1 || brokers > 16 || partitions < 1 || partitions > 1024 || port < 0 || port > 65535) {
    std::fprintf(stderr, "sluice kafka-dev: --brokers 1..16, --partitions 1..1024, --port 0..65535\n");
    return 2;
  }
  for (const auto& f : files) {
    LoadedSpec spec;
    if (!load_pipeline(f, &spec)) return 2;
    for (const auto& s : spec.pipeline.sources()) {
      if (!s.has_kafka()) continue;
      topics_jobs.push_back(s.kafka().topic());
      topics_single.insert(topics_single.end(), {s.kafka().results_topic(), s.kafka().retry_topic(), s.kafka().dead_letter_topic()});
    }
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", error, sizeof error);
  rd_kafka_t* handle = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (!handle) {
    std::fprintf(stderr, "sluice kafka-dev: %s\n", error);
    return 1;
  }
  rd_kafka_mock_cluster_t* cluster = rd_kafka_mock_cluster_new(handle, brokers);
  if (!cluster) {
    std::fprintf(stderr, "sluice kafka-dev: the mock cluster did not start\n");
    rd_kafka_destroy(handle);
    return 1;
  }
  std::set<std::string> made;
  auto create = [&](const std::string& topic, int n) {
    if (topic.empty() || !made.insert(topic).second) return true;
    if (rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(cluster, topic.c_str(), n, 1)) {
      std::fprintf(stderr, "sluice kafka-dev: cannot create topic '%s': %s\n", topic.c_str(), rd_kafka_err2str(err));
      return false;
    }
    return true;
  };
  bool ok = true;
  for (const auto& t : topics_jobs) ok &= create(t, partitions);
  for (const auto& t : topics_single) ok &= create(t, 1);
  const std::string bootstraps = rd_kafka_mock_cluster_bootstraps(cluster);
  const std::string first = bootstraps.substr(0, bootstraps.find(','));
  if (ok && port > 0) ok = start_forwarder(port, first);
  if (!ok) {
    rd_kafka_mock_cluster_destroy(cluster);
    rd_kafka_destroy(handle);
    return 1;
  }
  std::printf("%s\n", port > 0 ? ("127.0.0.1:" + std::to_string(port)).c_str() : bootstraps.c_str());
  std::fflush(stdout);
  std::cerr << "sluice kafka-dev: mock cluster of " << brokers << " broker(s) at " << bootstraps;
  if (port > 0) std::cerr << ", relayed from 127.0.0.1:" << port;
  std::cerr << "; topics:";
  for (const auto& t : made) std::cerr << " " << t;
  std::cerr << "\nsluice kafka-dev: in memory only; SIGTERM or Ctrl-C stops it\n";
  int sig = 0;
  sigwait(&signals, &sig);
  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(handle);
  return 0;
}

}  // namespace sluice::cli
