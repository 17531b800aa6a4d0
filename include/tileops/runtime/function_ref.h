// FunctionRef: a non-owning reference to a callable, cheaper than std::function for hot paths.
#pragma once

#include <type_traits>
#include <utility>

namespace tileops {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  // Implicit on purpose (callers pass lambdas); the constraint excludes FunctionRef itself.
  // NOLINTBEGIN(google-explicit-constructor, bugprone-forwarding-reference-overload)
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
           std::is_invocable_r_v<R, F&, Args...>) FunctionRef(F&& f)
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}
  // NOLINTEND(google-explicit-constructor, bugprone-forwarding-reference-overload)

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace tileops
