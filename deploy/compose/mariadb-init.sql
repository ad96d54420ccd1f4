-- The palaver user creates one database per tenant at run time, so it needs rights on every database.
CREATE USER IF NOT EXISTS 'palaver'@'%' IDENTIFIED BY 'palaver';
GRANT ALL PRIVILEGES ON *.* TO 'palaver'@'%';
FLUSH PRIVILEGES;
