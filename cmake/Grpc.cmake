# TensorFlow Serving protos and gRPC stubs as the static library powerctl_protos.
#
# The .proto files in protos/ are a minimal subset written from TensorFlow's field numbers;
# their packages and paths match upstream, so the wire bytes and the service path
# /tensorflow.serving.PredictionService/Predict are the real ones. C++ is generated into the
# build tree at build time (nothing generated is committed), with Debian 12's protoc and
# grpc_cpp_plugin so the generated code always matches the installed runtime libraries.

find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)

set(POWERCTL_PROTO_DIR ${CMAKE_SOURCE_DIR}/protos)
set(POWERCTL_PROTO_OUT ${CMAKE_BINARY_DIR}/generated/protos)
set(POWERCTL_PROTO_MESSAGES
    tensorflow/core/framework/types.proto
    tensorflow/core/framework/tensor_shape.proto
    tensorflow/core/framework/tensor.proto
    tensorflow_serving/apis/model.proto
    tensorflow_serving/apis/predict.proto
    tensorflow_serving/apis/prediction_service.proto)
# Only these declare services; grpc_cpp_plugin would write empty stubs for the others.
set(POWERCTL_PROTO_SERVICES tensorflow_serving/apis/prediction_service.proto)

set(_powerctl_proto_inputs)
set(_powerctl_proto_outputs)
foreach(_proto ${POWERCTL_PROTO_MESSAGES})
  string(REGEX REPLACE "\\.proto$" "" _stem ${_proto})
  list(APPEND _powerctl_proto_inputs ${POWERCTL_PROTO_DIR}/${_proto})
  list(APPEND _powerctl_proto_outputs ${POWERCTL_PROTO_OUT}/${_stem}.pb.cc
       ${POWERCTL_PROTO_OUT}/${_stem}.pb.h)
endforeach()
foreach(_proto ${POWERCTL_PROTO_SERVICES})
  string(REGEX REPLACE "\\.proto$" "" _stem ${_proto})
  list(APPEND _powerctl_proto_outputs ${POWERCTL_PROTO_OUT}/${_stem}.grpc.pb.cc
       ${POWERCTL_PROTO_OUT}/${_stem}.grpc.pb.h)
endforeach()

# Protobuf_INCLUDE_DIRS provides google/protobuf/wrappers.proto (Int64Value).
add_custom_command(
  OUTPUT ${_powerctl_proto_outputs}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${POWERCTL_PROTO_OUT}
  COMMAND protobuf::protoc --proto_path=${POWERCTL_PROTO_DIR}
          --proto_path=${Protobuf_INCLUDE_DIRS} --cpp_out=${POWERCTL_PROTO_OUT}
          ${POWERCTL_PROTO_MESSAGES}
  COMMAND protobuf::protoc --proto_path=${POWERCTL_PROTO_DIR}
          --proto_path=${Protobuf_INCLUDE_DIRS} --grpc_out=${POWERCTL_PROTO_OUT}
          --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>
          ${POWERCTL_PROTO_SERVICES}
  WORKING_DIRECTORY ${POWERCTL_PROTO_DIR}
  DEPENDS ${_powerctl_proto_inputs} protobuf::protoc gRPC::grpc_cpp_plugin
  COMMENT "Generating C++ from protos/ (protoc + grpc_cpp_plugin)"
  VERBATIM)

add_library(powerctl_protos STATIC ${_powerctl_proto_outputs})
# SYSTEM: generated code is not ours, so powerctl_warnings must not judge it in our includes.
target_include_directories(powerctl_protos SYSTEM PUBLIC ${POWERCTL_PROTO_OUT})
target_link_libraries(powerctl_protos PUBLIC protobuf::libprotobuf gRPC::grpc++)
