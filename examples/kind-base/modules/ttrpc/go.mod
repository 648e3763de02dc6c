module example.com/standin/ttrpc

go 1.22

require example.com/standin/errdefs v1.0.0
