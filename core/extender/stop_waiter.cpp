#include "core/extender/stop_waiter.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <functional>
#include <optional>

namespace powerctl::extender {

namespace net = boost::asio;

struct StopWaiter::Impl {
  net::io_context io{1};
  net::signal_set signals{io};
  std::string reason = "stop requested";
  std::optional<std::stop_callback<std::function<void()>>> on_stop;
};

StopWaiter::StopWaiter(bool handle_signals, const std::stop_token& stop)
    : impl_(std::make_unique<Impl>()) {
  Impl* impl = impl_.get();
  if (handle_signals) {
    impl->signals.add(SIGTERM);
    impl->signals.add(SIGINT);
  }
  impl->signals.async_wait([impl](const boost::system::error_code& ec, int signal) {
    if (!ec) impl->reason = signal == SIGTERM ? "SIGTERM" : "SIGINT";
  });
  if (stop.stop_possible()) {
    impl->on_stop.emplace(stop, std::function<void()>([impl] {
                            net::post(impl->io, [impl] { impl->signals.cancel(); });
                          }));
  }
}

StopWaiter::~StopWaiter() = default;

std::string StopWaiter::Wait() {
  impl_->io.run();
  return impl_->reason;
}

}  // namespace powerctl::extender
