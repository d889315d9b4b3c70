#include "core/server/stop_waiter.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <functional>
#include <optional>

namespace powerctl::server {

namespace net = boost::asio;

struct StopWaiter::Impl {
  net::io_context io{1};
  net::signal_set signals{io};
  std::string reason = "stop requested";
  bool stopped = false;  // by a signal or the stop_token; handlers run in Wait/WaitFor
  std::function<void(const std::string&)> on_ignored;
  std::optional<std::stop_callback<std::function<void()>>> on_stop;

  void Arm() {
    signals.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (ec) {  // cancelled: stop requested
        stopped = true;
        return;
      }
      if (signal == SIGHUP) {
        if (on_ignored) on_ignored("SIGHUP");
        Arm();
        return;
      }
      stopped = true;
      reason = signal == SIGTERM ? "SIGTERM" : "SIGINT";
    });
  }
};

StopWaiter::StopWaiter(bool handle_signals, const std::stop_token& stop,
                       std::function<void(const std::string&)> on_ignored)
    : impl_(std::make_unique<Impl>()) {
  Impl* impl = impl_.get();
  impl->on_ignored = std::move(on_ignored);
  if (handle_signals) {
    impl->signals.add(SIGTERM);
    impl->signals.add(SIGINT);
    impl->signals.add(SIGHUP);
  }
  impl->Arm();
  if (stop.stop_possible()) {
    impl->on_stop.emplace(stop, std::function<void()>([impl] {
                            net::post(impl->io, [impl] { impl->signals.cancel(); });
                          }));
  }
}

StopWaiter::~StopWaiter() = default;

std::string StopWaiter::Wait() {
  if (!impl_->stopped) impl_->io.run();
  return impl_->reason;
}

std::optional<std::string> StopWaiter::WaitFor(std::chrono::milliseconds timeout) {
  // run_for returns when the time is up or, once the wait completed, for lack of work.
  if (!impl_->stopped) impl_->io.run_for(timeout);
  if (!impl_->stopped) return std::nullopt;
  return impl_->reason;
}

}  // namespace powerctl::server
