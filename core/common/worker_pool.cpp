#include "core/common/worker_pool.h"

#include <algorithm>
#include <system_error>

namespace powerctl {

struct WorkerPool::Loop {
  std::size_t n = 0;
  std::size_t size = 1;   // items per chunk
  std::size_t count = 0;  // chunks
  const std::function<void(std::size_t, std::size_t)>* chunk = nullptr;
  std::atomic<std::size_t> next{0};  // the next chunk to start
  std::atomic<std::size_t> done{0};  // chunks finished
  std::mutex mu;
  std::condition_variable finished;
};

WorkerPool::WorkerPool(std::size_t threads) {
  for (std::size_t i = 0; i < threads; ++i) {
    try {
      threads_.emplace_back([this] { Work(); });
    } catch (const std::system_error&) {
      break;  // fewer helpers: loops still complete on their callers
    }
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

bool WorkerPool::RunOne(Loop& loop) {
  const std::size_t c = loop.next++;
  if (c >= loop.count) return false;
  (*loop.chunk)(c * loop.size, std::min(loop.n, (c + 1) * loop.size));
  if (++loop.done == loop.count) {
    std::lock_guard lock(loop.mu);  // the caller may be about to wait
    loop.finished.notify_all();
  }
  return true;
}

void WorkerPool::Work() {
  for (;;) {
    std::shared_ptr<Loop> loop;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !loops_.empty(); });
      if (stopping_) return;
      loop = loops_.front();
      // Every chunk has been started: the loop needs no more helpers.
      if (loop->next.load() >= loop->count) {
        loops_.pop_front();
        continue;
      }
    }
    while (RunOne(*loop)) {
    }
  }
}

void WorkerPool::ForEachChunk(std::size_t n, std::size_t min_chunk,
                              const std::function<void(std::size_t, std::size_t)>& chunk) {
  // A few chunks per thread even out slow ones.
  const std::size_t wanted = (threads_.size() + 1) * 4;
  Run(n, std::max<std::size_t>({min_chunk, 1, (n + wanted - 1) / wanted}), chunk);
}

void WorkerPool::ForEach(std::size_t n, const std::function<void(std::size_t)>& item) {
  Run(n, 1, [&item](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) item(i);
  });
}

void WorkerPool::Run(std::size_t n, std::size_t chunk_size,
                     const std::function<void(std::size_t, std::size_t)>& chunk) {
  if (n == 0) return;
  auto loop = std::make_shared<Loop>();
  loop->n = n;
  loop->size = chunk_size;
  loop->count = (n + loop->size - 1) / loop->size;
  loop->chunk = &chunk;
  if (threads_.empty() || loop->count == 1) {
    chunk(0, n);
    return;
  }
  {
    std::lock_guard lock(mu_);
    loops_.push_back(loop);
  }
  wake_.notify_all();
  while (RunOne(*loop)) {
  }
  std::unique_lock lock(loop->mu);
  loop->finished.wait(lock, [&] { return loop->done.load() == loop->count; });
}

}  // namespace powerctl
